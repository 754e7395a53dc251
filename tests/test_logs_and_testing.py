"""log_retries records each retry and the give-up; no_sleep switches sleeping off everywhere."""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from backoff_iter import (
    Part,
    RetryLogger,
    aretrying,
    attempts,
    hedged,
    instrument,
    log_retries,
    retry,
    retrying,
)
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


def test_a_logger_adapter_keeps_the_fields_beside_its_own_and_its_process(caplog):
    """log_retries(LoggerAdapter(...)): each record has the retry_ fields and the
    adapter's extra, and the message its process() makes (an adapter's log() put its
    own extra= in place of the fields); an adapter of an adapter too."""
    caplog.set_level(logging.DEBUG, logger="adapted")

    class Tagged(logging.LoggerAdapter):
        def process(self, msg, kwargs):
            msg, kwargs = super().process(msg, kwargs)
            return f"[{self.extra['tag']}] {msg}", kwargs

    base = logging.getLogger("adapted")
    for logger in (
        logging.LoggerAdapter(base, {"request_id": "r-7"}),
        Tagged(logging.LoggerAdapter(base, {"request_id": "r-7"}), {"tag": "outer"}),
    ):
        caplog.clear()
        with no_sleep(), pytest.raises(ConnectionError):
            retry([0.25], name="fetch", observe=log_retries(logger))(failing(5))()
        retried, gave_up = caplog.records
        assert (retried.retry_attempt, retried.retry_delay) == (1, 0.25)
        assert (gave_up.retry_name, gave_up.retry_reason) == ("fetch", "exhausted")
        assert retried.request_id == gave_up.request_id == "r-7"
        assert retried.getMessage().endswith(
            "fetch: attempt 1 failed (ConnectionError: reset by peer); retrying in 0.25 s"
        )
    assert retried.getMessage().startswith("[outer] fetch")  # the outer process() was asked


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


def test_an_event_no_hook_wants_is_not_made():
    """Hooks with wants(kind) are asked before a retry or give-up event is
    made: the first retry's answer holds for the call's retries (asked once),
    a give-up is asked again; a hook without wants() hears everything, and a
    hook is told only what it wants, whoever else hears the event."""
    asked, heard = [], []

    class Choosy:
        def __init__(self, wanted):
            self.wanted = wanted

        def wants(self, kind):
            asked.append(kind)
            return kind in self.wanted

        def __call__(self, event):  # every event it is told
            heard.append((event.kind, event.number))

    def failing_call():
        raise ConnectionError("reset")

    def run(*hooks):
        asked.clear()
        heard.clear()
        with no_sleep(), pytest.raises(ConnectionError):  # no_sleep: the default log is quiet
            retry([0.0, 0.0, 0.0], observe=list(hooks))(failing_call)()

    run(Choosy({"give_up"}))
    assert asked == ["retry", "give_up"]  # the first retry only, then the give-up
    assert heard == [("give_up", 4)]
    run(Choosy({"retry"}))
    assert asked == ["retry", "give_up"]  # the first retry's yes holds for the call
    assert heard == [("retry", 1), ("retry", 2), ("retry", 3)]
    plain = []
    run(Choosy(()), plain.append)  # a plain hook wants every event: the choosy one hears none
    assert asked == ["retry", "give_up"] and heard == []
    assert [event.kind for event in plain] == ["retry"] * 3 + ["give_up"]
    run(Choosy(()), Choosy({"retry"}))  # either one wanting it makes the event, for it alone
    assert heard == [("retry", 1), ("retry", 2), ("retry", 3)]

    class Listing(Choosy):
        wants = frozenset({"give_up"})  # no method: not asked, and it hears every event

    run(Listing(()))
    assert heard == [("retry", 1), ("retry", 2), ("retry", 3), ("give_up", 4)]


def test_a_give_up_counts_its_elapsed_time_from_the_first_failure_though_no_retry_was_wanted():
    """The events no hook wants are not made, but the call still starts its
    clock at the first failure: the give-up's elapsed is what it would be
    had every retry been heard (the sleeps between, on a clock they move)."""
    now = [100.0]

    def sleep(seconds):
        now[0] += seconds

    class GiveUpsOnly:
        events = frozenset({"retry", "give_up"})

        def __init__(self):
            self.heard = []

        def wants(self, kind):
            return kind == "give_up"

        def __call__(self, event):
            self.heard.append(event)

    def failing_call():
        raise ConnectionError("reset")

    elapsed = []
    try:
        for choosy in (True, False):
            hook = GiveUpsOnly()
            instrument.disable()  # only this hook: the default log would want the retries
            # For the whole process, wanting no success: each call's first try runs bare.
            instrument.enable(hook if choosy else hook.heard.append)
            with pytest.raises(ConnectionError):
                retry([0.5, 1.0], clock=lambda: now[0], sleep=sleep)(failing_call)()
            elapsed.append([(e.kind, e.elapsed) for e in hook.heard])
    finally:
        instrument.reset()
    assert elapsed == [
        [("give_up", 1.5)],
        [("retry", 0.0), ("retry", 0.5), ("give_up", 1.5)],
    ]


def test_the_default_log_stays_quiet_in_tests_when_another_hook_makes_the_event(caplog):
    """Under no_sleep() the default logger wants nothing, but a plain hook
    makes every event: the logger, called with it, still logs nothing."""
    caplog.set_level(logging.DEBUG, logger="backoff_iter")
    seen = []
    with no_sleep(), pytest.raises(ConnectionError):
        retry([0.0], observe=seen.append)(failing(5))()
    assert [event.kind for event in seen] == ["retry", "give_up"]
    assert caplog.records == []


def test_the_retry_logger_wants_what_it_would_log(caplog):
    """RetryLogger.wants(kind): a retry, a give-up or an error (at the give-up's
    level: one ending a call after a retry) at a level its logger keeps, outside
    no_sleep() when quiet in tests; never other kinds."""
    logger = logging.getLogger("choosy")
    hook = RetryLogger(logger, level=logging.INFO, give_up_level=logging.ERROR)
    caplog.set_level(logging.WARNING, logger="choosy")
    assert [hook.wants(kind) for kind in ("retry", "give_up", "success", "error")] == [
        False,
        True,
        False,
        True,
    ]
    caplog.set_level(logging.INFO, logger="choosy")
    assert hook.wants("retry")
    assert not hook.wants("success") and not hook.wants("hedge")  # at any level
    caplog.set_level(logging.CRITICAL, logger="choosy")
    assert not hook.wants("give_up") and not hook.wants("error")
    caplog.set_level(logging.INFO, logger="choosy")
    quiet = RetryLogger(logger, level=logging.INFO, quiet_in_tests=True)
    assert quiet.wants("retry")
    with no_sleep():
        assert not quiet.wants("retry") and not quiet.wants("give_up")
        assert hook.wants("retry")  # not quiet in tests: still logs


def test_log_retries_tells_an_http_answer_by_its_status_and_an_error_without_a_message(caplog):
    """A retried response is logged as ``HTTP 503`` (urllib3's repr is an
    address, httpx's a bracket), and an error with no message as its type
    alone, not ``(TimeoutError: )``; the records' fields say the same."""
    import httpx
    import urllib3

    caplog.set_level(logging.WARNING, logger="backoff_iter")
    answers = [
        httpx.Response(503),
        urllib3.HTTPResponse(status=502, headers={"Retry-After": "1"}),
        TimeoutError(),
        "ok",
    ]
    with no_sleep():
        for attempt in retrying(
            [1.0] * 3, on=TimeoutError, on_result=lambda r: r != "ok", observe=log_retries()
        ):
            with attempt:
                answer = answers[attempt.number - 1]
                if isinstance(answer, BaseException):
                    raise answer
                attempt.set_result(answer)
    assert [r.getMessage() for r in caplog.records] == [
        "call: attempt 1 failed (result: HTTP 503); retrying in 1.00 s",
        "call: attempt 2 failed (result: HTTP 502); retrying in 1.00 s",
        "call: attempt 3 failed (TimeoutError); retrying in 1.00 s",
    ]
    assert [r.retry_message for r in caplog.records] == ["HTTP 503", "HTTP 502", ""]


def test_a_delay_below_a_tenth_of_a_second_is_logged_in_milliseconds(caplog):
    """A line saying "retrying in 0.00 s" told a reader nothing of a 1 ms delay: below 0.1 s it
    says milliseconds, to three figures; from 0.1 s on, seconds to two places."""
    caplog.set_level(logging.WARNING, logger="svc")
    hook = log_retries(logging.getLogger("svc"))
    with no_sleep():
        retry([0.001, 0.0625, 0.09999, 0.1], name="fetch", observe=hook)(failing(4))()
    assert [r.getMessage().rpartition("; ")[2] for r in caplog.records] == [
        "retrying in 1 ms",
        "retrying in 62.5 ms",
        "retrying in 0.10 s",  # not "100 ms": what rounds to a tenth of a second says so
        "retrying in 0.10 s",
    ]
    assert [r.retry_delay for r in caplog.records] == [0.001, 0.0625, 0.09999, 0.1]


def test_a_message_of_several_lines_is_logged_on_one_line(caplog):
    """httpx's raise_for_status() error has two lines, and a message may carry a
    server's text: the record before a retry was two lines (or a line forged),
    not "a line per retry".  The line shows the breaks escaped; the structured
    field keeps the message as it is."""
    caplog.set_level(logging.WARNING, logger="svc")
    said = "Server error '503'\nFor more information check: https://example.com/503"
    forged = "bad\r\nfetch: attempt 9 succeeded\u2028!"
    hook = log_retries(logging.getLogger("svc"))
    with no_sleep(), pytest.raises(ConnectionError):
        for attempt in retrying([1.0], on=ConnectionError, name="fetch", observe=hook):
            with attempt:
                raise ConnectionError(said if attempt.number == 1 else forged)
    assert [r.getMessage() for r in caplog.records] == [
        "fetch: attempt 1 failed (ConnectionError: Server error '503'\\nFor more information"
        " check: https://example.com/503); retrying in 1.00 s",
        "fetch: attempt 2 failed (ConnectionError: bad\\r\\nfetch: attempt 9 succeeded"
        "\\u2028!); giving up (exhausted)",
    ]
    assert [r.retry_message for r in caplog.records] == [said, forged]


def test_a_message_with_terminal_controls_is_logged_with_them_escaped(caplog):
    """A server's text with ESC sequences (cursor up, erase line), a backspace, a NUL, DEL
    or a C1 control went into the line as it was: on a terminal it could hide the lines
    before it and show a forged one.  The line shows every control but the tab escaped;
    the structured field keeps the message as it is."""
    caplog.set_level(logging.WARNING, logger="svc")
    forged = "bad\x1b[1A\x1b[2Kfetch: all good\x08\x00\x7f\x9b\tend"
    hook = log_retries(logging.getLogger("svc"))
    with no_sleep(), pytest.raises(ConnectionError):
        for attempt in retrying([], on=ConnectionError, name="fetch", observe=hook):
            with attempt:
                raise ConnectionError(forged)
    assert [r.getMessage() for r in caplog.records] == [
        "fetch: attempt 1 failed (ConnectionError: bad\\x1b[1A\\x1b[2Kfetch: all good"
        "\\x08\\x00\\x7f\\x9b\tend); giving up (exhausted)"
    ]
    assert caplog.records[0].retry_message == forged


def test_a_long_message_shows_its_first_thousand_characters_and_how_many_more(caplog):
    """A server's whole page in an exception went into every retry's line: the line shows
    the first 1,000 characters and says how many more there are; the field keeps it whole."""
    caplog.set_level(logging.WARNING, logger="svc")
    page = "<p>" + "x" * 1_000 + "\n" + "y" * 1_992 + "</p>"  # 3,000 characters
    hook = log_retries(logging.getLogger("svc"))
    with no_sleep(), pytest.raises(ConnectionError):
        for attempt in retrying([], on=ConnectionError, name="fetch", observe=hook):
            with attempt:
                raise ConnectionError(page if attempt.number == 1 else "short")
    [line] = [r.getMessage() for r in caplog.records]
    assert line == (
        f"fetch: attempt 1 failed (ConnectionError: {page[:1000]}... (2,000 more characters));"
        " giving up (exhausted)"
    )
    assert caplog.records[0].retry_message == page


@pytest.mark.parametrize("where", ["message", "name", "type"])
def test_bidirectional_controls_and_a_made_name_or_type_are_escaped_in_the_line(caplog, where):
    """Bidirectional-text controls (U+202A-202E, U+2066-2069) reorder what a viewer shows
    and went into the line as they were, as did a control in the policy's name= (built
    from a URL, say) or in the type name of an exception made at run time: each is
    escaped as the message's controls are, wherever it is alone; the structured fields
    keep them whole."""
    caplog.set_level(logging.WARNING, logger="svc")
    bidi = "".join(map(chr, (*range(0x202A, 0x202F), *range(0x2066, 0x206A))))
    texts = {"message": "reset", "name": "fetch", "type": "Made"}
    texts[where] = {
        "message": f"a{bidi}z",
        "name": "GET /\u2066x\r\nforged",
        "type": "Made\u202e\x1b[2K",
    }[where]
    made = type(texts["type"], (ConnectionError,), {})
    hook = log_retries(logging.getLogger("svc"))
    with no_sleep(), pytest.raises(ConnectionError):
        for attempt in retrying([], on=ConnectionError, name=texts["name"], observe=hook):
            with attempt:
                raise made(texts["message"])
    shown = {
        "message": "fetch: attempt 1 failed (Made: a\\u202a\\u202b\\u202c\\u202d\\u202e"
        "\\u2066\\u2067\\u2068\\u2069z); giving up (exhausted)",
        "name": "GET /\\u2066x\\r\\nforged: attempt 1 failed (Made: reset); giving up (exhausted)",
        "type": "fetch: attempt 1 failed (Made\\u202e\\x1b[2K: reset); giving up (exhausted)",
    }[where]
    assert [r.getMessage() for r in caplog.records] == [shown]
    (record,) = caplog.records
    assert (record.retry_name, record.retry_error, record.retry_message) == (
        texts["name"],
        texts["type"],
        texts["message"],
    )


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
    """A non-logger or a bad level is reported at once; so is an object with log() but no
    isEnabledFor(), such as the logging module, or a logger's class (taken, they ended the
    call at its first retry with the hook's AttributeError or TypeError)."""
    from checks import rejects

    with pytest.raises(TypeError, match="logger"):
        log_retries("svc")

    class LogOnly:
        def log(self, level, msg, *args, **kwargs):
            pass

    for wrong in (logging, LogOnly(), logging.Logger, logging.LoggerAdapter):
        rejects(lambda w=wrong: log_retries(w), TypeError, "logger", "logging.Logger")
        rejects(lambda w=wrong: RetryLogger(w), TypeError, "logger")
    with pytest.raises(TypeError, match="level"):
        log_retries(level="WARNING")


def test_a_level_set_after_the_logger_is_made_is_checked_as_it_is_set():
    """The levels are attributes: one set to a name ("DEBUG", as Logger.setLevel takes),
    a bool or a level too large to name was taken, and the next retry ended the call with
    logging's TypeError; now the assignment is refused, naming the attribute, and the
    hook keeps its level.  A good level set takes effect."""
    from checks import rejects

    hook = log_retries(logging.getLogger("svc"))
    for name in ("level", "give_up_level"):
        for wrong, error in (("DEBUG", TypeError), (True, TypeError), (2**63, ValueError)):
            rejects(lambda n=name, w=wrong: setattr(hook, n, w), error, name)
    assert (hook.level, hook.give_up_level) == (logging.WARNING, logging.ERROR)
    hook.level, hook.give_up_level = logging.INFO, logging.CRITICAL
    assert (hook.level, hook.give_up_level) == (logging.INFO, logging.CRITICAL)
    records: list[logging.LogRecord] = []
    logger = logging.getLogger("backoff_iter.tests.levels_set")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger.addHandler(handler)
    hook = RetryLogger(logger)
    hook.level, hook.give_up_level = logging.INFO, logging.CRITICAL
    try:
        with pytest.raises(ConnectionError):
            retry([0.0], name="fetch", observe=hook, sleep=lambda s: None)(failing(5))()
    finally:
        logger.removeHandler(handler)
    assert [record.levelno for record in records] == [logging.INFO, logging.CRITICAL]


def test_a_level_too_large_to_name_is_refused_when_made():
    """logging names a level it does not know by its digits: a level of more
    than str() converts was taken, and the first retry's record ended the call
    with the interpreter's ValueError; one of 19 digits still logs."""
    from checks import rejects

    for name in ("level", "give_up_level"):
        rejects(lambda n=name: RetryLogger(**{n: 10**5000}), ValueError, name, "at most")
        rejects(lambda n=name: log_retries(**{n: 2**63}), ValueError, name, "at most")
    logger = logging.getLogger("backoff_iter.tests.huge_level")
    logger.propagate = False
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger.addHandler(handler)
    failures = [OSError("reset")]

    @retry([0.0], on=OSError, observe=RetryLogger(logger, level=2**63 - 1), sleep=lambda s: None)
    def call():
        if failures:
            raise failures.pop()
        return "ok"

    try:
        assert call() == "ok"
    finally:
        logger.removeHandler(handler)
    assert [record.levelno for record in records] == [2**63 - 1]


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


@pytest.mark.parametrize("form", ["sync", "async"])
def test_no_sleep_counts_the_delays_it_records_as_time_passed_for_a_deadline(form):
    """Under no_sleep no time passed, so a deadline never shortened nor ended the
    schedule: [1.0, 1.0, 1.0] and 4 attempts given up "exhausted", where a real run
    sleeps 1.0 then what is left of 1.5 s, 3 attempts given up at the "deadline".  The
    delays recorded count as time passed, as the docs say they would have been slept."""
    events, attempts = [], []

    def fail():
        attempts.append(1)
        raise ConnectionError

    options = {"deadline": 1.5, "on": ConnectionError, "observe": events.append}
    with no_sleep() as slept:
        with pytest.raises(ConnectionError):
            if form == "sync":
                retry([1.0, 1.0, 1.0], **options)(fail)()
            else:

                async def afail():
                    fail()

                asyncio.run(retry([1.0, 1.0, 1.0], **options)(afail)())
    assert len(attempts) == 3 and slept[0] == 1.0 and 0.4 < slept[1] <= 0.5
    [give_up] = [event for event in events if event.kind == "give_up"]
    assert give_up.reason == "deadline" and give_up.elapsed == pytest.approx(1.5, abs=0.05)


def test_no_sleep_reaches_other_threads_and_nests():
    """A thread's retries are recorded too; the innermost open block records."""
    with no_sleep() as outer:
        with no_sleep() as inner:
            thread = threading.Thread(target=retry([0.5])(failing(1)))
            thread.start()
            thread.join()
        retry([0.75])(failing(1))()
    assert inner == [0.5] and outer == [0.75]


@pytest.mark.long_run
def test_no_sleep_blocks_closed_at_once_in_threads_each_remove_their_own():
    """Eight threads opening and closing blocks at once, switching every microsecond:
    each close removes its own list, and none is left (a close between another's search
    and deletion left a list behind, switching sleeping off for good, or raised)."""
    from backoff_iter import _sleeping

    def churn():
        start.wait()
        for _ in range(2000):
            with no_sleep():
                pass

    interval, open_before = sys.getswitchinterval(), list(_sleeping.recorders)
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(20):  # the race without the lock shows in most rounds
            start = threading.Barrier(8)
            with ThreadPoolExecutor(8) as pool:
                for done in [pool.submit(churn) for _ in range(8)]:
                    done.result()
            assert _sleeping.recorders == open_before
    finally:
        sys.setswitchinterval(interval)
        _sleeping.recorders[:] = open_before


class ClosedMeanwhile(list):
    """The open blocks' lists, the last closed by another thread between a loop's check
    that one is open and its read of the newest."""

    def __getitem__(self, index):
        self.clear()
        return super().__getitem__(index)


def test_a_block_closed_in_another_thread_as_a_loop_sleeps_lets_it_sleep(monkeypatch):
    """A loop that found a block open, which another thread closed before the loop read it,
    sleeps as if none was open - sync and async (it raised IndexError out of the call)."""
    from backoff_iter import _sleeping

    slept = []

    async def asleep(seconds):
        slept.append(seconds)

    sync_failing = failing(1)

    async def async_failing():
        return sync_failing()

    monkeypatch.setattr(_sleeping, "recorders", ClosedMeanwhile([[]]))
    assert retry([0.5], sleep=slept.append)(failing(1))() == "ok"
    monkeypatch.setattr(_sleeping, "recorders", ClosedMeanwhile([[]]))
    assert asyncio.run(retry([0.25], sleep=asleep)(async_failing)()) == "ok"
    assert slept == [0.5, 0.25]


def test_without_no_sleep_the_real_sleep_runs(monkeypatch):
    """Once the block is closed, sleeping is back."""
    slept = []
    monkeypatch.setattr("time.sleep", slept.append)
    with no_sleep():
        pass
    retry([0.5])(failing(1))()
    assert slept == [0.5]


class Unprintable(ConnectionError):
    """A client's error whose message reads what its __init__ never set."""

    def __init__(self, response=None):
        super().__init__()
        self.response = response

    def __str__(self):
        return f"HTTP {self.response.status_code}"


def test_a_failure_whose_message_raises_is_logged_and_retried_all_the_same(caplog):
    """The default log read str(failure) itself: an error whose __str__ raises ended the
    call with the logger's AttributeError at the first attempt, for every driver."""
    caplog.set_level(logging.DEBUG, logger="backoff_iter")
    calls = []

    @retry([0.0, 0.0], on=ConnectionError, sleep=lambda s: None, name="fetch")
    def fetch():
        calls.append(1)
        if len(calls) < 3:
            raise Unprintable()
        return "ok"

    assert fetch() == "ok" and len(calls) == 3
    assert [r.getMessage() for r in caplog.records] == [
        f"fetch: attempt {n} failed (Unprintable: <unprintable Unprintable: its message"
        f" raised AttributeError>); retrying in 0.00 s"
        for n in (1, 2)
    ]


class RefusingAfterTheFirst(Part):
    """A part that refuses every attempt after the first (as an open breaker would)."""

    def before_attempt(self, call):
        if call.number > 1:
            raise PermissionError("the circuit is open")
        return 0.0


def run_every_form(form, outcomes, **options):
    """Run one call named "fetch" of *form* over *outcomes* (one per attempt:
    an exception to raise, or a result), sleeping nothing (the default log
    stays on: no no_sleep()); what it raised."""
    outcomes = iter(outcomes)

    def answer():
        outcome = next(outcomes)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    async def asleep(seconds):
        pass

    options = {"name": "fetch", "on": ConnectionError, **options}
    sync = {**options, "sleep": lambda seconds: None}
    asynchronous = {**options, "sleep": asleep}

    async def loop():
        async for attempt in aretrying([0.5, 0.5], **asynchronous):
            async with attempt:
                answer()

    async def decorated():
        return answer()

    def stream():
        yield answer()

    async def astream():
        yield answer()

    async def consume(items):
        return [item async for item in items]

    async def hedging():
        await asyncio.sleep(0)
        return answer()

    try:
        if form == "retry":
            retry([0.5, 0.5], **sync)(answer)()
        elif form == "async retry":
            asyncio.run(retry([0.5, 0.5], **asynchronous)(decorated)())
        elif form == "retrying":
            for attempt in retrying([0.5, 0.5], **sync):
                with attempt:
                    answer()
        elif form == "aretrying":
            asyncio.run(loop())
        elif form == "stream":
            list(retry([0.5, 0.5], **sync)(stream)())
        elif form == "async stream":
            asyncio.run(consume(retry([0.5, 0.5], **asynchronous)(astream)()))
        else:
            asyncio.run(hedged(hedging, [60, 60], **options))
    except BaseException as error:
        return error
    raise AssertionError("the call did not fail")


FORMS = ["retry", "async retry", "retrying", "aretrying", "stream", "async stream"]


@pytest.mark.parametrize("form", [*FORMS, "hedged"])
@pytest.mark.parametrize("observed", [False, True], ids=["default log", "log_retries"])
def test_a_call_that_retried_and_ends_on_an_error_logs_its_last_line(caplog, form, observed):
    """A retry, then a failure on= does not match: the log said "retrying in" and
    then nothing, for every form, on the default log and on log_retries(); now a
    last line at the give-up's level says it was not retried."""
    caplog.set_level(logging.DEBUG, logger="backoff_iter")
    hook = {"observe": log_retries()} if observed else {}
    failure = KeyError("missing")
    raised = run_every_form(form, [ConnectionError("reset"), failure], **hook)
    assert raised is failure
    give_up = "ERROR" if observed else "WARNING"
    retried = "retrying in 0.00 s" if form == "hedged" else "retrying in 0.50 s"
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", f"fetch: attempt 1 failed (ConnectionError: reset); {retried}"),
        (give_up, "fetch: attempt 2 failed (KeyError: 'missing'); not retried"),
    ]
    last = caplog.records[-1]
    assert (last.retry_attempt, last.retry_delay, last.retry_error, last.retry_reason) == (
        2,
        None,
        "KeyError",
        None,
    )


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("observed", [False, True], ids=["default log", "log_retries"])
def test_a_part_refusing_the_attempt_after_a_retry_is_logged(caplog, form, observed):
    """A breaker (here a part) refuses attempt 2 after the retry was logged: the
    call ended with its refusal and the log said nothing more; now it says so - and
    that attempt 2 never ran (it said "attempt 2 failed ...; not retried")."""
    caplog.set_level(logging.DEBUG, logger="backoff_iter")
    hook = {"observe": log_retries()} if observed else {}
    raised = run_every_form(
        form, [ConnectionError("reset")], parts=[RefusingAfterTheFirst()], **hook
    )
    assert isinstance(raised, PermissionError)
    assert [r.getMessage() for r in caplog.records] == [
        "fetch: attempt 1 failed (ConnectionError: reset); retrying in 0.50 s",
        "fetch: attempt 2 never ran (PermissionError: the circuit is open); refused",
    ]
    assert caplog.records[-1].levelname == ("ERROR" if observed else "WARNING")
    assert caplog.records[-1].retry_reason == "refused"


def test_a_sleep_that_breaks_before_the_next_attempt_is_logged_as_never_run(caplog):
    """The sleep before attempt 2 raised: the log said "attempt 2 failed (...); not
    retried" of an attempt that never ran."""
    caplog.set_level(logging.DEBUG, logger="backoff_iter")

    def broken(seconds):
        raise RuntimeError("no sleep")

    @retry([0.5], name="fetch", on=ConnectionError, sleep=broken)
    def fetch():
        raise ConnectionError("reset")

    with pytest.raises(RuntimeError):
        fetch()
    assert [r.getMessage() for r in caplog.records] == [
        "fetch: attempt 1 failed (ConnectionError: reset); retrying in 0.50 s",
        "fetch: attempt 2 never ran (RuntimeError: no sleep); interrupted",
    ]


def test_an_error_of_the_first_attempt_or_an_interruption_after_a_retry_logs_nothing_more(
    caplog,
):
    """The last line is for a call that retried and ends on an error: none for an error
    of its first attempt (no retry to close), none for a Ctrl-C or a cancellation in the
    sleep (the caller's, no give-up).  A hook of retries and give-ups hears such an error
    only if its wants("error") says so (not one without wants(), which it used to ignore),
    and none of a first attempt."""
    caplog.set_level(logging.DEBUG, logger="backoff_iter")
    assert isinstance(run_every_form("retry", [KeyError("k")]), KeyError)
    assert caplog.records == []

    def interrupted(seconds):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        retry([0.5], on=ConnectionError, name="fetch", sleep=interrupted)(failing(5))()
    assert [r.getMessage() for r in caplog.records] == [
        "fetch: attempt 1 failed (ConnectionError: reset by peer); retrying in 0.50 s"
    ]

    class FailuresOnly:
        events = frozenset({"retry", "give_up"})

        def __init__(self):
            self.heard = []

        def __call__(self, event):
            self.heard.append((event.kind, event.number))

    class WantingErrors(FailuresOnly):
        def wants(self, kind):
            return True

    plain, hook, seen = FailuresOnly(), WantingErrors(), []
    instrument.enable(plain, hook)
    try:
        assert isinstance(run_every_form("retry", [KeyError("k")]), KeyError)
        # (a hook of the call's own makes the event: still not for the failure hooks)
        assert isinstance(run_every_form("retrying", [KeyError()], observe=seen.append), KeyError)
        assert isinstance(run_every_form("retrying", [ConnectionError(), KeyError()]), KeyError)
        own = WantingErrors()  # a hook of the call's own that wants errors: told once
        run_every_form("retrying", [ConnectionError(), KeyError()], observe=own)
    finally:
        instrument.reset()
    assert [event.kind for event in seen] == ["error"]
    assert hook.heard == [("retry", 1), ("error", 2)] * 2
    assert plain.heard == [("retry", 1)] * 2
    assert own.heard == [("retry", 1), ("error", 2)]


def test_an_error_after_a_retry_that_no_failure_hook_wants_is_not_made(caplog):
    """The hooks of retries and give-ups are asked wants("error") for a call that retried:
    a logger that drops the level makes no event, nor is a hook that says no told of one
    made for a hook of the call's own, which still hears it."""
    caplog.set_level(logging.CRITICAL, logger="backoff_iter")
    made = []
    made_before = instrument.new_call_id
    seen, unwanted = [], []

    class Unwanting:
        events = frozenset({"retry", "give_up"})

        def wants(self, kind):
            return kind == "retry"

        def __call__(self, event):
            if event.kind != "retry":
                unwanted.append(event.kind)

    try:
        instrument.new_call_id = lambda: made.append(1) or 7  # each call's first event
        run_every_form("retrying", [ConnectionError(), KeyError()])
        assert made == []  # the default log wanted neither the retry nor the error
        instrument.enable(Unwanting())
        run_every_form("retrying", [ConnectionError(), KeyError()], observe=seen.append)
    finally:
        instrument.new_call_id = made_before
        instrument.reset()
    assert [(e.kind, e.number) for e in seen] == [("retry", 1), ("error", 2)]
    assert unwanted == []
    assert caplog.records == []
