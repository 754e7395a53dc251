"""The adapters against the real peers: tenacity, backoff, requests/urllib3 and httpx
talking to a local HTTP server on 127.0.0.1 that each test starts."""

from __future__ import annotations

import asyncio
import copy
import email.utils
import math
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import chain, count, islice, repeat

import backoff
import httpx
import pytest
import requests
import tenacity
from checks import in_threads, rejects
from urllib3.exceptions import ConnectTimeoutError

from backoff_iter import TokenBucket, constant, exponential, instrument
from backoff_iter.interop import (
    RetryTransport,
    Urllib3Retry,
    backoff_wait_gen,
    tenacity_schedule,
    tenacity_wait,
)
from backoff_iter.testing import no_sleep

# -- a local server answering 503 n times, then 200 --------------------------------------


class Server:
    """An HTTP server on 127.0.0.1 that answers *failures* times with *status* (and a
    Retry-After if given), then 200 with body "ok"; it counts the requests it saw."""

    def __init__(self, failures=0, status=503, retry_after=None):
        self.failures, self.status, self.retry_after = failures, status, retry_after
        self.seen = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                server.answer(self)

            do_POST = do_PUT = do_DELETE = do_GET

            def log_message(self, *args):
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/thing"
        self.thread = threading.Thread(target=self.http.serve_forever, args=(0.02,), daemon=True)

    def answer(self, handler):
        length = int(handler.headers.get("Content-Length") or 0)
        handler.rfile.read(length)
        self.seen.append(handler.command)
        failing = self.failures is None or len(self.seen) <= self.failures
        body = b"busy" if failing else b"ok"
        handler.send_response(self.status if failing else 200)
        if failing and self.retry_after is not None:
            handler.send_header("Retry-After", self.retry_after)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.http.shutdown()
        self.http.server_close()


def dated(seconds):
    """An HTTP-date *seconds* from now, and a check that sleeps read from it
    are what was left of those seconds: the date drops its fraction of a
    second, and the time since it was made has passed (a slow run's too)."""
    made = time.time()

    def left(slept):
        gone = time.time() - made
        return all(seconds - 1 - gone <= s <= seconds for s in slept)

    return email.utils.formatdate(made + seconds, usegmt=True), left


# -- tenacity ---------------------------------------------------------------------------


def failing(times, then="ok"):
    left = [times]

    def call():
        if left[0]:
            left[0] -= 1
            raise OSError("flaky")
        return then

    return call


def test_tenacity_sleeps_the_schedule_in_order_with_its_own_sleep_hook():
    """The n-th retry sleeps the n-th delay; composes with stop= and retry=."""
    slept = []
    retrying = tenacity.Retrying(
        wait=tenacity_wait(lambda: exponential(0.5, cap=3)),
        stop=tenacity.stop_after_attempt(6),
        retry=tenacity.retry_if_exception_type(OSError),
        sleep=slept.append,
        reraise=True,
    )
    assert retrying(failing(4)) == "ok"
    assert slept == [0.5, 1.0, 2.0, 3.0]
    with pytest.raises(OSError):
        retrying(failing(10))
    assert slept[4:] == [0.5, 1.0, 2.0, 3.0, 3.0]  # a fresh schedule per call


def test_tenacity_wait_adds_to_tenacitys_own_waits():
    """wait_fixed(1) + ours, and ours + wait_fixed(1), sleep the sums."""
    slept = []
    for wait in (
        tenacity.wait_fixed(1) + tenacity_wait(lambda: [0.25, 0.5]),
        tenacity_wait(lambda: [0.25, 0.5]) + tenacity.wait_fixed(1),
    ):
        tenacity.Retrying(wait=wait, sleep=slept.append, stop=tenacity.stop_after_attempt(3))(
            failing(2)
        )
    assert slept == [1.25, 1.5, 1.25, 1.5]


def test_tenacity_interleaved_calls_and_threads_do_not_share_a_schedule():
    """Two calls whose retries interleave, and eight threads, each get the whole schedule."""
    wait = tenacity_wait(lambda: islice(count(1), 10))
    log = {}

    def call(name, failures):
        slept = log.setdefault(name, [])
        tenacity.Retrying(wait=wait, sleep=slept.append, stop=tenacity.stop_after_attempt(10))(
            failing(failures)
        )

    async def interleaved():
        async def one(name):
            slept = log.setdefault(name, [])

            async def asleep(seconds):
                slept.append(seconds)
                await asyncio.sleep(0)  # let the other call run between retries

            async for attempt in tenacity.AsyncRetrying(
                wait=wait, sleep=asleep, stop=tenacity.stop_after_attempt(10)
            ):
                with attempt:
                    if len(slept) < 3:
                        raise OSError

        await asyncio.gather(one("a"), one("b"))

    asyncio.run(interleaved())
    threads = [threading.Thread(target=call, args=(f"t{i}", 5)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert log["a"] == log["b"] == [1, 2, 3]
    assert all(log[f"t{i}"] == [1, 2, 3, 4, 5] for i in range(8))


def _deep_copies(retrying):
    """A deep copy of a tenacity Retrying - or, for a tenacity whose Retrying holds a
    thread-local (before 9.2: no Retrying deep-copies, its own waits or not), one made of
    deep copies of its wait and stop, taken together as a Retrying's copy takes them."""
    try:
        return copy.deepcopy(retrying)
    except TypeError:
        with pytest.raises(TypeError):  # tenacity's own fails too: its doing, not ours
            copy.deepcopy(tenacity.Retrying())
    wait, stop = copy.deepcopy((retrying.wait, retrying.stop))
    return retrying.copy(wait=wait, stop=stop)


def test_tenacity_a_deep_copy_of_a_retrying_with_our_wait_and_stop_works_as_the_original():
    """copy.deepcopy of a Retrying (tenacity's own copies fine) with either adapter: it was
    a TypeError (cannot pickle '_thread.lock'); the copy sleeps the schedule and stops with it."""
    wait, stop = tenacity_schedule([0.25, 0.5])
    for original in (
        tenacity.Retrying(wait=wait, stop=stop, reraise=True),
        tenacity.Retrying(
            wait=tenacity_wait([0.25, 0.5]), stop=tenacity.stop_after_attempt(3), reraise=True
        ),
    ):
        slept = []
        copied = _deep_copies(original).copy(sleep=slept.append)
        with pytest.raises(OSError, match="flaky"):
            copied(failing(5))
        assert slept == [0.25, 0.5]


def test_tenacity_running_out_of_delays_says_so():
    """Delays shorter than tenacity's stop: a clear RuntimeError, not a silent default."""
    retrying = tenacity.Retrying(
        wait=tenacity_wait(lambda: [0.1]), sleep=lambda s: None, stop=tenacity.stop_after_attempt(5)
    )
    with pytest.raises(RuntimeError, match="delays"):
        retrying(failing(3))


def test_tenacity_running_out_of_delays_is_caused_by_the_calls_last_error():
    """The RuntimeError of a bare wait that ran out carries the call's last error as its
    cause (its traceback showed nothing of what failed); a result retried has none."""
    errors = [OSError(i) for i in range(5)]
    calls = iter(errors)

    def down():
        raise next(calls)

    retrying = tenacity.Retrying(wait=tenacity_wait([0.1]), sleep=lambda s: None)
    with pytest.raises(RuntimeError, match="retry 2") as raised:
        retrying(down)
    assert raised.value.__cause__ is errors[1]
    polling = tenacity.Retrying(
        wait=tenacity_wait([0.1]),
        retry=tenacity.retry_if_result(lambda r: r is None),
        sleep=lambda s: None,
    )
    with pytest.raises(RuntimeError, match="retry 2") as raised:
        polling(lambda: None)
    assert raised.value.__cause__ is None


@pytest.mark.parametrize(
    "stop", ["a clock's stop", "an async stop"], ids=["stop_before_delay", "async"]
)
def test_tenacity_a_stop_other_than_after_attempt_is_never_asked_ahead(stop):
    """Delays running out at retry 3 under a stop the wait cannot ask ahead (one reading the
    clock and the upcoming sleep, or an async one, whose coroutine was taken for True):
    RuntimeError as before, no attempt sent without its delay, no coroutine left unawaited."""
    import warnings

    now = [0.0]

    def call():
        now[0] += 3.0
        raise OSError("flaky")

    if stop == "an async stop":

        async def later(retry_state):
            return retry_state.attempt_number >= 5

        async def main():
            retrying = tenacity.AsyncRetrying(
                wait=tenacity_wait([0.1, 0.2]), stop=later, sleep=asyncio.sleep
            )
            async for attempt in retrying:
                with attempt:
                    call()

        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with no_sleep(), pytest.raises(RuntimeError, match="retry 3"):
                asyncio.run(main())
    else:
        retrying = tenacity.Retrying(
            wait=tenacity_wait([1.0, 1.0]),
            stop=tenacity.stop_before_delay(11.5),
            sleep=lambda s: now.__setitem__(0, now[0] + s),
        )
        import time as time_module

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(time_module, "monotonic", lambda: now[0])
            with pytest.raises(RuntimeError, match="retry 3"):
                retrying(call)


def test_tenacity_delays_that_end_with_its_stop_end_the_call_with_its_error():
    """Two delays and stop_after_attempt(3): tenacity asks the wait of retry 3 before its
    stop, and the delays have none; the stop ends the call there, so no RuntimeError
    (there was one): the call's own OSError, after sleeping both delays."""
    slept = []
    retrying = tenacity.Retrying(
        wait=tenacity_wait([0.5, 1.0]),
        stop=tenacity.stop_after_attempt(3),
        reraise=True,
        sleep=slept.append,
    )
    with pytest.raises(OSError, match="flaky"):
        retrying(failing(5))
    assert slept == [0.5, 1.0]
    slept.clear()  # the same in `a | b`
    retrying = tenacity.Retrying(
        wait=tenacity_wait([0.5, 1.0]),
        stop=tenacity.stop_after_attempt(3) | tenacity.stop_after_delay(3600),
        reraise=True,
        sleep=slept.append,
    )
    with pytest.raises(OSError, match="flaky"):
        retrying(failing(5))
    assert slept == [0.5, 1.0]


@pytest.mark.parametrize(
    "stop",
    [
        tenacity.stop_after_delay(3600) | tenacity.stop_after_attempt(3) | tenacity.stop_never,
        tenacity.stop_never | (tenacity.stop_after_delay(3600) | tenacity.stop_after_attempt(3)),
        tenacity.stop_after_attempt(3) & tenacity.stop_after_attempt(2),
    ],
    ids=["a_or_b_or_c", "a_or_nested_b_or_c", "a_and_b"],
)
def test_tenacity_delays_that_end_with_a_stop_of_three_parts_end_the_call_with_its_error(stop):
    """`a | b | c` is tenacity's stop_any(stop_any(a, b), c), and `a & b` its stop_all: a
    stop_after_attempt(3) anywhere in them ends the call where the delays end, with its own
    error (a RuntimeError only looked one `|` deep)."""
    slept = []
    retrying = tenacity.Retrying(
        wait=tenacity_wait([0.5, 1.0]), stop=stop, reraise=True, sleep=slept.append
    )
    with pytest.raises(OSError, match="flaky"):
        retrying(failing(5))
    assert slept == [0.5, 1.0]


def test_tenacity_a_stop_and_one_that_has_not_come_yet_is_no_stop():
    """`stop_after_attempt(3) & stop_after_attempt(9)` does not stop at retry 3: running out
    there is the RuntimeError, not an attempt sent without its delay."""
    retrying = tenacity.Retrying(
        wait=tenacity_wait([0.5, 1.0]),
        stop=tenacity.stop_after_attempt(3) & tenacity.stop_after_attempt(9),
        sleep=lambda s: None,
    )
    with pytest.raises(RuntimeError, match="retry 3"):
        retrying(failing(5))


@pytest.mark.parametrize(
    "stop",
    [
        tenacity.stop_after_attempt(5),
        tenacity.stop_after_delay(3600),
        "own & stop_after_attempt(5)",
    ],
    ids=["after_attempt", "after_delay", "own_and_after_attempt"],
)
def test_tenacity_schedules_wait_without_its_stop_never_retries_without_a_delay(stop):
    """The wait of tenacity_schedule under a stop that does not end with it (its own stop
    left out, or `own & other`): running out is the RuntimeError of a bare wait, not
    retries at once, again and again, until the other stop comes (it slept 0.0 each time)."""
    wait, own = tenacity_schedule([0.1])
    if stop == "own & stop_after_attempt(5)":
        stop = own & tenacity.stop_after_attempt(5)
    slept = []
    retrying = tenacity.Retrying(wait=wait, stop=stop, sleep=slept.append, reraise=True)
    with pytest.raises(RuntimeError, match="retry 2"):
        retrying(failing(10))
    assert slept == [0.1]


def test_tenacity_schedules_wait_ends_where_its_stop_does_inside_a_combined_stop():
    """Its own stop anywhere in `a | b | c` ends the call with its error, sleeping no 0.0."""
    wait, own = tenacity_schedule([0.1, 0.2])
    slept = []
    retrying = tenacity.Retrying(
        wait=wait,
        stop=tenacity.stop_after_delay(3600) | own | tenacity.stop_after_attempt(10),
        sleep=slept.append,
        reraise=True,
    )
    with pytest.raises(OSError, match="flaky"):
        retrying(failing(10))
    assert slept == [0.1, 0.2]


# -- backoff ------------------------------------------------------------------------------


def test_backoff_on_exception_sleeps_the_schedule_in_order(monkeypatch):
    """backoff primes the generator with send(None); the waits are the schedule's, in order."""
    slept = []
    monkeypatch.setattr("time.sleep", slept.append)
    waits = []
    flaky = backoff.on_exception(
        backoff_wait_gen(lambda: exponential(0.5)),
        OSError,
        max_tries=4,
        jitter=None,
        on_backoff=lambda details: waits.append(details["wait"]),
    )(failing(3))
    assert flaky() == "ok"
    assert waits == slept == [0.5, 1.0, 2.0]
    flaky2 = backoff.on_exception(
        backoff_wait_gen(lambda: exponential(0.5)), OSError, max_tries=3, jitter=None
    )(failing(1))
    assert flaky2() == "ok" and slept[3:] == [0.5]  # a fresh schedule per call


@pytest.mark.parametrize(
    "option, value", [("max_trys", 2), ("max_value", 30)], ids=["misspelt", "expos_own"]
)
def test_backoff_an_option_it_hands_the_wait_gen_is_refused_naming_it(option, value, monkeypatch):
    """backoff hands every keyword its decorators do not know to the wait_gen: a misspelt
    max_tries, or expo's max_value, is a TypeError naming it and its value, before any
    attempt - it was ignored (no limit at all, or not the cap meant)."""
    monkeypatch.setattr("time.sleep", lambda s: None)
    calls = []

    def down():
        calls.append(1)
        raise OSError("down")

    for decorator, what in ((backoff.on_exception, (OSError,)), (backoff.on_predicate, ())):
        decorated = decorator(backoff_wait_gen([0.1, 0.2]), *what, jitter=None, **{option: value})(
            down
        )
        rejects(decorated, TypeError, option, str(value), "backoff_wait_gen")
    assert calls == []


@pytest.mark.long_run
@pytest.mark.parametrize("peer", ["backoff", "tenacity", "tenacity_schedule"])
def test_an_endless_poll_does_not_keep_every_delay_it_slept(peer, monkeypatch):
    """A poll retried 10,000 more times on an endless schedule holds its memory flat: each
    adapter kept every delay its call had drawn (some 32 bytes a retry, without end)."""
    import tracemalloc

    monkeypatch.setattr("time.sleep", lambda s: None)
    marks = {}
    polls = count()

    def poll():
        n = next(polls)
        if n in (2_000, 12_000):
            marks[n] = tracemalloc.get_traced_memory()[0]
        return "done" if n == 12_000 else None

    tracemalloc.start()
    try:
        if peer == "backoff":
            wait_gen = backoff_wait_gen(lambda: constant(0.0))
            assert backoff.on_predicate(wait_gen, jitter=None, logger=None)(poll)() == "done"
        else:
            wait, stop = tenacity_schedule(lambda: constant(0.0))
            retrying = tenacity.Retrying(
                wait=tenacity_wait(lambda: constant(0.0)) if peer == "tenacity" else wait,
                stop=tenacity.stop_never if peer == "tenacity" else stop,
                retry=tenacity.retry_if_result(lambda result: result is None),
                sleep=lambda s: None,
            )
            assert retrying(poll) == "done"
    finally:
        tracemalloc.stop()
    assert marks[12_000] - marks[2_000] < 60_000  # every delay kept: about 320,000


def test_backoff_on_predicate_and_threads_get_their_own_schedules(monkeypatch):
    """on_predicate retries falsy results; threads calling at once each see 0.25, 0.5, 0.75."""
    seen = {}
    wait_gen = backoff_wait_gen(lambda: [0.25, 0.5, 0.75])

    def run(name):
        results = iter([None, None, None, "ok"])
        decorated = backoff.on_predicate(
            wait_gen,
            max_tries=4,
            jitter=None,
            on_backoff=lambda details: seen.setdefault(name, []).append(details["wait"]),
        )(lambda: next(results))
        assert decorated() == "ok"

    monkeypatch.setattr("time.sleep", lambda s: None)
    threads = [threading.Thread(target=run, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == {i: [0.25, 0.5, 0.75] for i in range(6)}


# -- requests + Urllib3Retry --------------------------------------------------------------


def session(**retry):
    s = requests.Session()
    s.mount("http://", requests.adapters.HTTPAdapter(max_retries=Urllib3Retry(**retry)))
    return s


@pytest.mark.parametrize(
    "retry_after, expected",
    [(None, [0.5, 1.0, 2.0]), ("4", [4.0, 4.0, 4.0]), ("date", "about 30")],
)
def test_requests_retries_503_with_the_schedule_and_retry_after(retry_after, expected):
    """503 three times then 200: four requests, the schedule's sleeps raised to Retry-After."""
    header, left = dated(30) if retry_after == "date" else (retry_after, None)
    with Server(failures=3, retry_after=header) as server, no_sleep() as slept:
        response = session(delays=lambda: exponential(0.5), total=5, status_forcelist=[503]).get(
            server.url
        )
    assert response.status_code == 200 and response.text == "ok"
    assert server.seen == ["GET"] * 4
    if expected == "about 30":
        assert len(slept) == 3 and left(slept), slept
    else:
        assert slept == expected


def test_requests_each_request_gets_its_own_schedule():
    """Two requests through one adapter each call the factory: the n-th gets the n-th schedule."""
    schedules = count(1)
    with Server(failures=None) as server, no_sleep() as slept:
        s = session(
            delays=lambda: constant(next(schedules)),
            total=2,
            status_forcelist=[503],
            raise_on_status=False,
        )
        assert s.get(server.url).status_code == 503
        assert s.get(server.url).status_code == 503
    assert slept == [1.0, 1.0, 2.0, 2.0]
    assert len(server.seen) == 6


def test_requests_a_server_that_never_recovers_ends_with_urllib3s_error():
    """total=2 against a constant 503: three requests, then requests' RetryError."""
    with Server(failures=None) as server, no_sleep() as slept:
        with pytest.raises(requests.exceptions.RetryError):
            session(delays=lambda: constant(0.1), total=2, status_forcelist=[503]).get(server.url)
    assert len(server.seen) == 3 and slept == [0.1, 0.1]


def test_requests_stops_when_the_schedule_runs_out():
    """Two delays and total=10: three requests, then exhausted."""
    with Server(failures=None) as server, no_sleep() as slept:
        response = session(
            delays=lambda: [0.2, 0.4], total=10, status_forcelist=[503], raise_on_status=False
        ).get(server.url)
    assert response.status_code == 503 and len(server.seen) == 3 and slept == [0.2, 0.4]


def test_requests_post_is_not_retried_by_default():
    """urllib3 retries only idempotent methods: one POST, the 503 comes back."""
    with Server(failures=3) as server, no_sleep() as slept:
        response = session(
            delays=lambda: exponential(0.5), total=5, status_forcelist=[503], raise_on_status=False
        ).post(server.url, data=b"x")
    assert response.status_code == 503 and server.seen == ["POST"] and slept == []


def test_a_huge_retry_after_is_clamped():
    """Retry-After: 10**12 sleeps retry_after_max, not forever."""
    with Server(failures=1, retry_after="1000000000000") as server, no_sleep() as slept:
        session(delays=lambda: [0.1], total=2, status_forcelist=[503], retry_after_max=60).get(
            server.url
        )
    assert slept == [60.0]


# -- httpx + RetryTransport ----------------------------------------------------------------


@pytest.mark.parametrize(
    "retry_after, expected",
    [(None, [0.5, 1.0, 2.0]), ("3", [3.0, 3.0, 3.0]), ("date", "about 30")],
)
def test_httpx_sync_and_async_retry_503_then_succeed(retry_after, expected):
    """Sync and async clients: four requests, the schedule's sleeps raised to Retry-After."""
    for mode in ("sync", "async"):
        header, left = dated(30) if retry_after == "date" else (retry_after, None)
        with Server(failures=3, retry_after=header) as server, no_sleep() as slept:
            transport = RetryTransport(delays=lambda: exponential(0.5))
            if mode == "sync":
                with httpx.Client(transport=transport) as client:
                    response = client.get(server.url)
            else:

                async def get(transport=transport):
                    async with httpx.AsyncClient(transport=transport) as client:
                        return await client.get(server.url)

                response = asyncio.run(get())
        assert response.status_code == 200 and response.text == "ok", mode
        assert server.seen == ["GET"] * 4, mode
        if expected == "about 30":
            assert len(slept) == 3 and left(slept), (mode, slept)
        else:
            assert slept == expected, mode


def test_httpx_returns_the_last_response_when_the_delays_run_out():
    """A server that never recovers: 1 + 2 requests, the last 503 returned, not raised."""
    with Server(failures=None) as server, no_sleep() as slept:
        with httpx.Client(transport=RetryTransport(delays=lambda: [0.1, 0.2])) as client:
            response = client.get(server.url)
    assert response.status_code == 503 and response.text == "busy"
    assert len(server.seen) == 3 and slept == [0.1, 0.2]


def test_httpx_post_is_not_retried_by_default_and_methods_widen_it():
    """POST passes through once; methods={'POST'} retries it."""
    with Server(failures=1) as server, no_sleep():
        with httpx.Client(transport=RetryTransport(delays=lambda: [0.1])) as client:
            assert client.post(server.url, content=b"x").status_code == 503
    assert server.seen == ["POST"]
    with Server(failures=1) as server, no_sleep():
        transport = RetryTransport(delays=lambda: [0.1], methods={"POST"})
        with httpx.Client(transport=transport) as client:
            assert client.post(server.url, content=b"x").status_code == 200
    assert server.seen == ["POST", "POST"]


def test_httpx_retries_connection_errors_and_raises_the_last():
    """Nobody listening: each attempt fails to connect; the last ConnectError is raised."""
    with Server() as server:
        url = server.url
    with no_sleep() as slept:
        with httpx.Client(transport=RetryTransport(delays=lambda: [0.1, 0.1])) as client:
            with pytest.raises(httpx.ConnectError):
                client.get(url)
    assert slept == [0.1, 0.1]


def test_httpx_closes_every_response_it_discards():
    """Discarded responses are read and closed: the pool is not left with open streams."""
    closed = []

    class Recording(httpx.HTTPTransport):
        def handle_request(self, request):
            response = super().handle_request(request)
            original = response.close

            def close():
                closed.append(response.status_code)
                original()

            response.close = close
            return response

    with Server(failures=2) as server, no_sleep():
        with httpx.Client(
            transport=RetryTransport(Recording(), delays=lambda: [0.1, 0.1])
        ) as client:
            assert client.get(server.url).status_code == 200
    assert closed[:2] == [503, 503]


def test_httpx_shares_the_drivers_deadline_and_budget():
    """deadline= and budget= behave as in retrying: the bucket stops the retries."""
    bucket = TokenBucket(max_tokens=2, token_ratio=0.1)
    with Server(failures=None) as server, no_sleep() as slept:
        transport = RetryTransport(delays=lambda: constant(0.1), budget=bucket)
        with httpx.Client(transport=transport) as client:
            assert client.get(server.url).status_code == 503
    assert len(server.seen) == 1 and slept == []  # 2 - 1 = 1 token: not above half


# -- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, word",
    [
        (lambda: tenacity_wait(iter([1.0])), "delays"),
        (lambda: tenacity_wait(3), "delays"),
        (lambda: tenacity_schedule(exponential(1)), "delays"),
        (lambda: backoff_wait_gen(iter([1.0, 2.0])), "delays"),
        (lambda: Urllib3Retry(delays=exponential(1)), "delays"),
        (lambda: Urllib3Retry(delays=[1.0], sleep=3), "sleep"),
        (lambda: RetryTransport(delays=5), "delays"),
        (lambda: RetryTransport(delays=lambda: [1.0], statuses="503"), "statuses"),
        (lambda: RetryTransport(delays=lambda: [1.0], methods="GET"), "methods"),
        (lambda: RetryTransport("http://x", delays=lambda: [1.0]), "transport"),
        (lambda: RetryTransport(delays=lambda: [1.0], deadline=-1), "deadline"),
        (lambda: RetryTransport(observe=3), "observe"),
    ],
)
def test_bad_arguments_name_the_parameter(make, word):
    """A non-callable factory, an iterator (one call's worth) or a bad option fails at construction."""
    rejects(make, (TypeError, ValueError), word)


def test_a_factory_returning_a_non_iterable_names_it():
    """The factory's result is checked when a schedule is made."""
    retrying = tenacity.Retrying(
        wait=tenacity_wait(lambda: 5), sleep=lambda s: None, stop=tenacity.stop_after_attempt(3)
    )
    with pytest.raises(TypeError, match="delays"):
        retrying(failing(1))


# -- ending with the peer's own error, lists, bodies, connections ----------------------------


class Script:
    """An HTTP/1.1 server on 127.0.0.1 answering each request with the next of *answers*:
    (status, headers, body), "cut" for a 503 whose body stops short and whose
    connection closes, "drip" for a 200 whose body's second half waits for ``go``
    (2 s at most: ``held_too_long``), or "stall" for headers that never end (each line comes
    quickly, the blank line never).  It records (method, path, client port) per request."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.seen = []
        self.go, self.held_too_long = threading.Event(), False  # (for "drip")
        script = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive: a reused connection shows in the port

            def do_GET(self):
                length = int(self.headers.get("Content-Length") or 0)
                if self.headers.get("Transfer-Encoding") == "chunked":
                    while True:
                        size = int(self.rfile.readline().strip(), 16)
                        self.rfile.read(size + 2)
                        if size == 0:
                            break
                elif length:
                    self.rfile.read(length)
                script.seen.append((self.command, self.path, self.client_address[1]))
                answer = script.answers.pop(0) if script.answers else (200, {}, b"ok")
                if answer == "stall":  # headers that never end, a line every 0.02 s
                    self.wfile.write(b"HTTP/1.1 200 OK\r\n")
                    for _ in range(250):  # (5 s at most, however slow the machine)
                        time.sleep(0.02)
                        try:
                            self.wfile.write(b"X-Wait: 1\r\n")
                            self.wfile.flush()
                        except OSError:  # the client gave up and went
                            break
                    self.close_connection = True
                    return
                if answer == "drip":  # half the body, the rest once the test says go
                    self.send_response(200)
                    self.send_header("Content-Length", "20")
                    self.end_headers()
                    self.wfile.write(b"first half")
                    self.wfile.flush()
                    script.held_too_long = not script.go.wait(2.0)
                    self.wfile.write(b"second one")
                    return
                if answer == "cut":
                    self.send_response(503)
                    self.send_header("Content-Length", "100")
                    self.end_headers()
                    self.wfile.write(b"only ten..")
                    self.close_connection = True
                    return
                status, headers, body = answer
                self.send_response(status)
                for name, value in headers.items():  # a list: the header on lines of its own
                    for line in value if isinstance(value, list) else [value]:
                        self.send_header(name, line)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_PUT = do_GET

            def log_message(self, *args):
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/thing"
        self.thread = threading.Thread(target=self.http.serve_forever, args=(0.02,), daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.http.shutdown()
        self.http.server_close()


BUSY = (503, {}, b"busy")


def _delays_noting_the_lock(held, made):
    """A factory of 0.1, 0.2, 0.3 that notes in *held*, as it draws each, whether
    the lock of the schedule in ``made[0]`` is held."""

    def delays():
        for value in (0.1, 0.2, 0.3):
            held.append(made[0]._lock.locked())
            yield value

    return delays


def test_a_schedule_draws_its_delays_only_holding_its_lock():
    """One call's schedule, which threads of one request may ask at once: every delay is
    drawn with the schedule's lock held, and the n-th retry always gets the n-th delay."""
    from backoff_iter._schedule import Schedule

    held, made = [], []
    delays = _delays_noting_the_lock(held, made)
    made.append(Schedule("delays", delays))
    schedule = made[0]
    assert [schedule.delay(n) for n in (2, 1, 3, 2, 4)] == [0.2, 0.1, 0.3, 0.2, None]
    assert held == [True, True, True]


def test_a_latest_schedule_answers_a_number_again_draws_ahead_and_never_goes_back():
    """tenacity's and backoff's schedule: retry n asked again is the same delay, a later
    number draws on holding the lock, an earlier one is refused, not answered wrongly."""
    from backoff_iter._schedule import Latest

    held, made = [], []
    delays = _delays_noting_the_lock(held, made)
    made.append(Latest("delays", delays))
    latest = made[0]
    assert [latest.delay(n) for n in (1, 1, 3, 3, 4, 5)] == [0.1, 0.1, 0.3, 0.3, None, None]
    assert held == [True, True, True]
    with pytest.raises(RuntimeError, match="retry 2 asked after retry 5"):
        latest.delay(2)


def test_tenacity_schedule_plans_no_sleep_once_the_delays_run_out():
    """The wait tenacity asks before the stop ends the call is 0, never a sleep to come."""
    wait, stop = tenacity_schedule([0.25])
    seen = []

    def down():
        raise OSError

    tenacity.Retrying(
        wait=wait,
        stop=stop,
        sleep=lambda s: None,
        retry_error_callback=lambda state: seen.append(
            (state.attempt_number, state.upcoming_sleep)
        ),
    )(down)
    assert seen == [(2, 0.0)]


def test_tenacity_schedule_ends_with_the_calls_own_error_when_the_delays_run_out():
    """wait and stop from one schedule: two retries, then the last OSError itself, not RetryError."""
    wait, stop = tenacity_schedule([0.25, 0.5])
    slept = []
    errors = [OSError(i) for i in range(5)]
    calls = iter(errors)

    def down():
        raise next(calls)

    with pytest.raises(OSError) as raised:
        tenacity.Retrying(wait=wait, stop=stop, sleep=slept.append, reraise=True)(down)
    assert raised.value is errors[2] and slept == [0.25, 0.5]
    # Combined with tenacity's own stop, whichever comes first ends it.
    slept.clear()
    calls = iter(errors)
    wait, stop = tenacity_schedule(lambda: constant(0.1))
    with pytest.raises(OSError):
        tenacity.Retrying(
            wait=wait, stop=stop | tenacity.stop_after_attempt(3), sleep=slept.append, reraise=True
        )(down)
    assert slept == [0.1, 0.1]


def test_tenacity_an_infinite_delay_is_no_next_retry():
    """A schedule yielding inf stops tenacity_schedule's calls; the bare wait says so."""
    wait, stop = tenacity_schedule([0.1, float("inf"), 0.1])
    slept = []
    with pytest.raises(OSError):
        tenacity.Retrying(wait=wait, stop=stop, sleep=slept.append, reraise=True)(failing(5))
    assert slept == [0.1]
    bare = tenacity.Retrying(
        wait=tenacity_wait([0.1, float("inf")]), sleep=slept.append, reraise=True
    )
    with pytest.raises(RuntimeError, match="retry 2"):
        bare(failing(5))


def test_backoff_ends_with_the_original_error_or_last_value_when_the_delays_run_out(monkeypatch):
    """No RuntimeError: backoff gives up as at max_tries, raising the error or returning the value."""
    monkeypatch.setattr("time.sleep", lambda s: None)
    gave_up = []
    errors = [OSError(i) for i in range(5)]
    calls = iter(errors)

    def down():
        raise next(calls)

    decorated = backoff.on_exception(
        backoff_wait_gen([0.1, 0.2]), OSError, jitter=None, on_giveup=gave_up.append
    )(down)
    with pytest.raises(OSError) as raised:
        decorated()
    assert raised.value is errors[2] and len(gave_up) == 1
    results = iter([None, None, "late"])
    polled = backoff.on_predicate(backoff_wait_gen([0.1]), jitter=None)(lambda: next(results))
    assert polled() is None  # the last value, after one retry


def test_every_adapter_takes_a_list_of_delays():
    """Lists and tuples are reusable delays everywhere, as in the drivers."""
    with Server(failures=1) as server, no_sleep() as slept:
        with httpx.Client(transport=RetryTransport(delays=[0.1])) as client:
            assert client.get(server.url).status_code == 200
    assert slept == [0.1]
    with Server(failures=1) as server, no_sleep() as slept:
        assert session(delays=(0.3,), status_forcelist=[503]).get(server.url).status_code == 200
    assert slept == [0.3]
    assert tenacity.Retrying(wait=tenacity_wait([0.0]), sleep=lambda s: None)(failing(1)) == "ok"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_httpx_a_body_that_cannot_be_sent_again_is_not_retried(mode):
    """A generator body goes once and its 503 comes back; a bytes body is retried."""

    def chunks():
        yield b"part one, "
        yield b"part two"

    async def achunks():
        for chunk in chunks():
            yield chunk

    def post(content):
        transport = RetryTransport(delays=[0.1], methods={"POST"})
        if mode == "sync":
            with httpx.Client(transport=transport) as client:
                return client.post(script.url, content=content)

        async def apost():
            async with httpx.AsyncClient(transport=transport) as client:
                return await client.post(script.url, content=content)

        return asyncio.run(apost())

    with Script([BUSY, BUSY]) as script, no_sleep() as slept:
        assert post(chunks() if mode == "sync" else achunks()).status_code == 503
        assert len(script.seen) == 1 and slept == []
        assert post(b"whole").status_code == 200
    assert len(script.seen) == 3 and slept == [0.1]


def test_httpx_methods_are_matched_whatever_their_case():
    """methods={"post"} retries POST."""
    with Script([BUSY]) as script, no_sleep():
        with httpx.Client(transport=RetryTransport(delays=[0.0], methods={"post"})) as client:
            assert client.post(script.url, content=b"x").status_code == 200
    assert [method for method, _, _ in script.seen] == ["POST", "POST"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_httpx_retries_429_not_500_by_default_and_hands_back_an_unread_stream(mode):
    """Default statuses: a 429 is retried, a 500 is not; the response kept is not read first."""
    answers = [(429, {}, b"slow down"), (500, {}, b"oops")]
    with Script(answers) as script, no_sleep() as slept:
        transport = RetryTransport(delays=[0.0, 0.0])
        if mode == "sync":
            with httpx.Client(transport=transport) as client:
                with client.stream("GET", script.url) as response:
                    consumed = response.is_stream_consumed
                    response.read()
        else:

            async def get():
                async with httpx.AsyncClient(transport=transport) as client:
                    async with client.stream("GET", script.url) as response:
                        consumed = response.is_stream_consumed
                        await response.aread()
                        return response, consumed

            response, consumed = asyncio.run(get())
    assert response.status_code == 500 and response.text == "oops" and not consumed
    assert len(script.seen) == 2 and slept == [0.0]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_httpx_reads_a_retried_response_so_its_connection_is_reused(mode):
    """Three answers on one keep-alive connection: a discarded 503 is read before it is let go."""
    with Script([BUSY, BUSY]) as script, no_sleep():
        transport = RetryTransport(delays=[0.0, 0.0])
        if mode == "sync":
            with httpx.Client(transport=transport) as client:
                assert client.get(script.url).status_code == 200
        else:

            async def get():
                async with httpx.AsyncClient(transport=transport) as client:
                    return await client.get(script.url)

            assert asyncio.run(get()).status_code == 200
    ports = {port for _, _, port in script.seen}
    assert len(script.seen) == 3 and len(ports) == 1


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_httpx_closes_a_response_whose_body_failed_midway(mode):
    """A 503 whose body is cut short fails while read; it is closed before the retry."""
    closed = []

    class Spy(httpx.BaseTransport, httpx.AsyncBaseTransport):
        def __init__(self):
            self.sync, self.asynchronous = httpx.HTTPTransport(), httpx.AsyncHTTPTransport()

        def close(self):
            self.sync.close()

        async def aclose(self):
            await self.asynchronous.aclose()

        def handle_request(self, request):
            return self.spied(self.sync.handle_request(request))

        async def handle_async_request(self, request):
            return self.spied(await self.asynchronous.handle_async_request(request))

        def spied(self, response):
            stream = response.stream
            original = type(stream)

            class Closing(original):
                def close(self):
                    closed.append(response.status_code)
                    return original.close(self)

                async def aclose(self):
                    closed.append(response.status_code)
                    return await original.aclose(self)

            stream.__class__ = Closing
            return response

    with Script(["cut"]) as script, no_sleep() as slept:
        transport = RetryTransport(Spy(), delays=[0.0])
        if mode == "sync":
            with httpx.Client(transport=transport) as client:
                assert client.get(script.url).status_code == 200
        else:

            async def get():
                async with httpx.AsyncClient(transport=transport) as client:
                    return await client.get(script.url)

            assert asyncio.run(get()).status_code == 200
    assert slept == [0.0] and closed.count(503) >= 1


def test_urllib3_a_redirect_takes_no_delay_of_the_schedule():
    """A 302, then two 503s, then 200 through urllib3 itself: the retries sleep the first two delays."""
    import urllib3

    answers = [(302, {"Location": "/moved"}, b""), BUSY, BUSY]
    retry = Urllib3Retry(delays=[0.1, 0.2, 0.4], total=5, status_forcelist=[503])
    with Script(answers) as script, no_sleep() as slept:
        with urllib3.PoolManager() as pool:  # 1.26 follows redirects with request's retries only
            response = pool.request("GET", script.url, retries=retry)
    assert response.status == 200
    assert [path for _, path, _ in script.seen] == ["/thing", "/moved", "/moved", "/moved"]
    assert slept == [0.1, 0.2]


def test_urllib3_an_infinite_delay_exhausts_the_retries():
    """[0.1, inf]: one retry, then urllib3's own exhaustion."""
    with Script([BUSY, BUSY, BUSY]) as script, no_sleep() as slept:
        response = session(
            delays=[0.1, float("inf")], total=5, status_forcelist=[503], raise_on_status=False
        ).get(script.url)
    assert response.status_code == 503 and len(script.seen) == 2 and slept == [0.1]


def test_urllib3_retry_tells_hooks_each_retry_and_the_give_up():
    """name= and observe=: a retry event before each sleep, a give-up when urllib3 runs out."""
    seen = []
    with Script([BUSY, BUSY]) as script, no_sleep():
        response = session(
            delays=[0.25, 0.5], total=3, status_forcelist=[503], name="api", observe=seen.append
        ).get(script.url)
    assert response.status_code == 200
    assert [(e.kind, e.name, e.number, e.delay, e.slept) for e in seen] == [
        ("retry", "api", 1, 0.25, 0.0),
        ("retry", "api", 2, 0.5, 0.25),
    ]
    assert seen[0].call_id == seen[1].call_id and seen[0].outcome.status == 503
    seen.clear()
    with Script([BUSY] * 5) as script, no_sleep():
        with pytest.raises(requests.exceptions.RetryError):
            session(delays=[0.1] * 5, total=1, status_forcelist=[503], observe=seen.append).get(
                script.url
            )
    assert [(e.kind, e.number, e.reason) for e in seen] == [
        ("retry", 1, None),
        ("give_up", 2, "exhausted"),
    ]
    assert seen[0].call_id == seen[1].call_id and seen[1].name == "call"


def test_urllib3_retry_makes_no_event_that_no_hook_wants():
    """A hook whose wants() says no (as the default log does while its logger drops the
    level) is asked, as the drivers ask, before an event is made: Urllib3Retry made each
    retry's and give-up's event and told it all the same."""

    class Quiet:
        def __init__(self):
            self.heard, self.asked = [], []

        def wants(self, kind):
            self.asked.append(kind)
            return False

        def __call__(self, event):
            self.heard.append(event.kind)

    quiet = Quiet()
    with Script([BUSY] * 5) as script, no_sleep():
        with pytest.raises(requests.exceptions.RetryError):
            session(delays=[0.1] * 5, total=1, status_forcelist=[503], observe=quiet).get(
                script.url
            )
    assert (quiet.heard, quiet.asked) == ([], ["retry", "give_up"])


def test_urllib3_retry_tells_a_hook_both_enabled_and_observing_once():
    """A hook given to observe= and enabled too hears each retry once."""
    seen = []
    instrument.enable(seen.append)
    try:
        with Script([BUSY]) as script, no_sleep():
            session(delays=[0.25], total=3, status_forcelist=[503], observe=seen.append).get(
                script.url
            )
    finally:
        instrument.reset()
    assert [event.kind for event in seen] == ["retry"]


# -- every option reaches the peer, and every bad one is named --------------------------------------


def test_tenacity_makes_one_schedule_per_call():
    """The factory runs once per tenacity call, however many retries ask for a delay."""
    made = []

    def factory():
        made.append(1)
        return [0.1, 0.2, 0.3]

    tenacity.Retrying(wait=tenacity_wait(factory), sleep=lambda s: None)(failing(3))
    assert made == [1]


@pytest.mark.parametrize("adapter", ["tenacity_wait", "tenacity_schedule", "backoff_wait_gen"])
def test_a_bad_schedule_is_named_as_delays_in_every_adapter(adapter, monkeypatch):
    """A factory returning a non-iterable, or a negative delay: the error's parameter is "delays"."""
    monkeypatch.setattr("time.sleep", lambda s: None)

    def call(delays):
        if adapter == "backoff_wait_gen":
            return backoff.on_exception(backoff_wait_gen(delays), OSError, jitter=None)(
                failing(1)
            )()
        if adapter == "tenacity_wait":
            wait, stop = tenacity_wait(delays), tenacity.stop_after_attempt(3)
        else:
            wait, stop = tenacity_schedule(delays)
        return tenacity.Retrying(wait=wait, stop=stop, sleep=lambda s: None)(failing(1))

    rejects(lambda: call(lambda: 5), TypeError, "delays", "5")
    rejects(lambda: call([-1.0]), ValueError, "delays", "-1.0")


def test_interop_names_what_it_does_not_have():
    """An unknown name of backoff_iter.interop is an AttributeError naming it."""
    from backoff_iter import interop

    with pytest.raises(AttributeError, match="'Retry'"):
        interop.Retry  # noqa: B018 - the lookup is the test


def test_urllib3_retry_with_every_default_works():
    """Urllib3Retry() alone: urllib3's total of 10 and the drivers' default schedule."""
    retry = Urllib3Retry(status_forcelist=[503])
    assert retry.total == 10
    with Script([BUSY]) as script, no_sleep() as slept:
        assert session_of(retry).get(script.url).status_code == 200
    assert len(slept) == 1 and 0.0 < slept[0] <= 5.0


def session_of(retry):
    """A requests session retrying with *retry* on http://."""
    s = requests.Session()
    s.mount("http://", requests.adapters.HTTPAdapter(max_retries=retry))
    return s


def test_urllib3_a_retry_after_shorter_than_the_delay_does_not_shorten_it():
    """Retry-After: 1 against a 5 s delay sleeps 5 s: the hint only ever raises the delay."""
    with Server(failures=1, retry_after="1") as server, no_sleep() as slept:
        session(delays=[5.0], total=2, status_forcelist=[503]).get(server.url)
    assert slept == [5.0]


def test_urllib3_a_copy_made_before_any_request_gives_each_request_a_fresh_schedule():
    """retry.new(total=...) at set-up: two requests each start from the first delay."""
    seen = []
    retry = Urllib3Retry(delays=[0.1, 0.2], total=5, status_forcelist=[503], observe=seen.append)
    variant = retry.new(total=4)
    with Script([BUSY, (200, {}, b"ok"), BUSY]) as script, no_sleep() as slept:
        for _ in range(2):
            assert session_of(variant).get(script.url).status_code == 200
    assert slept == [0.1, 0.1] and len(script.seen) == 4
    assert seen[0].call_id != seen[1].call_id


def test_urllib3_a_deep_copy_made_mid_request_goes_on_with_its_schedule():
    """copy.deepcopy of a link after a failure works (it raised on the schedule's
    lock) and draws the request's next delays, not a fresh schedule's."""
    made = []

    def delays():
        made.append(1)
        return iter([0.1, 0.2, 0.3])

    cut = ConnectTimeoutError("cut")
    link = Urllib3Retry(delays=delays, total=5).increment("GET", "/", error=cut)
    twin = copy.deepcopy(link)
    assert twin.get_backoff_time() == link.get_backoff_time() == 0.1
    assert twin.increment("GET", "/", error=cut).get_backoff_time() == 0.2
    assert link.increment("GET", "/", error=cut).get_backoff_time() == 0.2
    assert len(made) == 1  # one schedule for the request, however its links are copied


def test_urllib3_retry_after_max_may_be_inf_and_is_checked():
    """retry_after_max=inf honours any hint; a negative one is rejected naming it."""
    retry = Urllib3Retry(delays=[0.1], status_forcelist=[503], retry_after_max=float("inf"))
    with Script([(503, {"Retry-After": "100000000"}, b"busy")]) as script, no_sleep() as slept:
        assert session_of(retry).get(script.url).status_code == 200
    assert slept == [1e8]
    rejects(lambda: Urllib3Retry(retry_after_max=-1), ValueError, "retry_after_max", "-1")


def test_urllib3_every_link_of_the_chain_sleeps_with_the_given_sleep():
    """sleep= reaches each copy urllib3 makes: the retries sleep with it, not with time.sleep."""
    slept = []
    retry = Urllib3Retry(delays=[0.25, 0.5], status_forcelist=[503], sleep=slept.append)
    copy = retry.new()
    assert copy.delays is retry.delays and copy.sleep_function is retry.sleep_function
    with Script([BUSY, BUSY]) as script:
        assert session_of(retry).get(script.url).status_code == 200
    assert slept == [0.25, 0.5]


def test_urllib3_a_zero_delay_is_not_slept_and_a_hint_can_be_ignored():
    """A 0.0 delay sleeps nothing; with respect_retry_after_header=False the schedule alone counts."""
    with Script([BUSY]) as script, no_sleep() as slept:
        retry = Urllib3Retry(delays=[0.0], status_forcelist=[503])
        assert session_of(retry).get(script.url).status_code == 200
    assert slept == []
    hinted = (503, {"Retry-After": "30"}, b"busy")
    with Script([hinted]) as script, no_sleep() as slept:
        retry = Urllib3Retry(delays=[0.5], status_forcelist=[503], respect_retry_after_header=False)
        assert session_of(retry).get(script.url).status_code == 200
    assert slept == [0.5]


def test_urllib3_retries_a_refused_connection_with_the_schedule():
    """Nobody listening: each connection error sleeps the next delay, then urllib3 gives up."""
    import urllib3

    with Script([]) as script:
        url = script.url
    retry = Urllib3Retry(delays=[0.1, 0.2], total=2)
    with no_sleep() as slept, urllib3.PoolManager(retries=retry) as pool:
        with pytest.raises(urllib3.exceptions.MaxRetryError):
            pool.request("GET", url)
    assert slept == [0.1, 0.2]


def test_urllib3_a_redirect_is_followed_when_the_schedule_is_empty():
    """A redirect needs no delay: delays=[] still follows it (and retries nothing)."""
    import urllib3

    answers = [(302, {"Location": "/moved"}, b"")]
    with Script(answers) as script, no_sleep() as slept:
        with urllib3.PoolManager(retries=Urllib3Retry(delays=[], total=5)) as pool:
            assert pool.request("GET", script.url).status == 200
    assert [path for _, path, _ in script.seen] == ["/thing", "/moved"] and slept == []


def test_urllib3_a_same_host_redirect_with_retry_after_takes_no_sleep(monkeypatch):
    """urllib3's pool follows a same-host 302 carrying Retry-After: 7 itself, and asked the
    retry to sleep it with time.sleep - past sleep= and no_sleep(). A redirect is not a
    retry: nothing is slept, by either."""
    import time as time_module

    import urllib3

    real_sleeps = []
    monkeypatch.setattr(time_module, "sleep", real_sleeps.append)
    answers = [(302, {"Location": "/moved", "Retry-After": "7"}, b"")]
    slept = []
    with Script(answers) as script:
        retry = Urllib3Retry(delays=[0.5], total=3, sleep=slept.append)
        port = script.http.server_address[1]
        with urllib3.HTTPConnectionPool("127.0.0.1", port, retries=retry) as pool:
            assert pool.urlopen("GET", "/thing", redirect=True).status == 200
    assert [path for _, path, _ in script.seen] == ["/thing", "/moved"]
    assert (slept, real_sleeps) == ([], [])


def test_urllib3_a_bad_factory_is_named_as_delays_at_the_first_retry():
    """A factory returning a non-iterable fails when the first retry draws from it, naming delays."""
    with Script([BUSY]) as script:
        rejects(
            lambda: session_of(Urllib3Retry(delays=lambda: 5, status_forcelist=[503])).get(
                script.url
            ),
            TypeError,
            "delays",
        )


class Recorder:
    """A rate limiter, throttle and breaker of one's own, writing down what it is asked and told."""

    def __init__(self):
        self.log = []

    def acquire(self, sleep):
        self.log.append("acquire")

    async def aacquire(self, sleep):
        self.log.append("acquire")

    def check(self):
        self.log.append("check")

    def record(self, flag):
        self.log.append(flag)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_httpx_every_option_reaches_the_driver_core(mode):
    """sleep, before_sleep, give_up, retry_after_max, name, observe and the parts act on the transport's retries."""
    slept, hooks, events = [], [], []
    limiter, throttle, breaker = Recorder(), Recorder(), Recorder()
    hinted = (503, {"Retry-After": "100"}, b"busy")
    transport = RetryTransport(
        delays=[0.5, 0.5],
        sleep=slept.append if mode == "sync" else None,
        before_sleep=lambda a, o, d: hooks.append(("before_sleep", o.status_code, d)),
        give_up=lambda a, o: hooks.append(("give_up", o.status_code)),
        retry_after_max=2.0,
        name="svc",
        observe=events.append,
        rate_limiter=limiter,
        throttle=throttle,
        breaker=breaker,
        throttled=lambda response: response.status_code == 429,
    )
    with Script([hinted, BUSY, BUSY]) as script:
        if mode == "sync":
            with httpx.Client(transport=transport) as client:
                assert client.get(script.url).status_code == 503
        else:

            async def asleep(seconds):
                slept.append(seconds)

            async def get():
                async with httpx.AsyncClient(transport=transport) as client:
                    return await client.get(script.url)

            with pytest.MonkeyPatch.context() as patch:
                patch.setattr("asyncio.sleep", asleep)
                assert asyncio.run(get()).status_code == 503
    assert slept == [2.0, 0.5]
    assert hooks == [("before_sleep", 503, 2.0), ("before_sleep", 503, 0.5), ("give_up", 503)]
    assert [(e.kind, e.name) for e in events] == [("retry", "svc")] * 2 + [("give_up", "svc")]
    # Each attempt asked first, then told: a 503 that is not a 429 is no throttle, but a failure.
    assert limiter.log == ["acquire", False] * 3
    assert throttle.log == ["check", True] * 3
    assert breaker.log == ["check", False] * 3


def test_httpx_on_deadline_and_clock_reach_the_driver_core():
    """on= replaces the default errors; clock= is the deadline's clock."""
    with Script([]) as script:
        url = script.url  # nobody listens any more
    with no_sleep() as slept:
        transport = RetryTransport(delays=[0.1], on=KeyError)
        with httpx.Client(transport=transport) as client, pytest.raises(httpx.ConnectError):
            client.get(url)
    assert slept == []  # a ConnectError is no KeyError
    readings = chain([0.0], repeat(100.0))
    with Script([BUSY]) as script, no_sleep() as slept:
        transport = RetryTransport(delays=[0.1], deadline=10, clock=lambda: next(readings))
        with httpx.Client(transport=transport) as client:
            assert client.get(script.url).status_code == 503  # 100 s passed: past the deadline
    assert slept == []


def test_httpx_events_are_named_call_by_default_and_the_clock_is_read_once():
    """Without name= the events say "call"; with no deadline or hook, only the call's start reads the clock."""
    events, readings = [], []

    def clock():
        readings.append(1)
        return 0.0

    with Script([BUSY, BUSY]) as script, no_sleep():
        transport = RetryTransport(delays=[0.0, 0.0], observe=events.append, clock=clock)
        with httpx.Client(transport=transport) as client:
            assert client.get(script.url).status_code == 200
    assert {e.name for e in events} == {"call"} and [e.kind for e in events][-1] == "success"
    assert len(readings) == 1 + len(events)  # the start, then one per event's elapsed time


class TimeoutSpy(httpx.HTTPTransport):
    """A real transport that writes down the timeout extension of each request it sends."""

    def __init__(self, seen):
        super().__init__()
        self.seen = seen

    def handle_request(self, request):
        self.seen.append(request.extensions.get("timeout"))
        return super().handle_request(request)


class AsyncTimeoutSpy(httpx.AsyncHTTPTransport):
    """TimeoutSpy for AsyncClient."""

    def __init__(self, seen):
        super().__init__()
        self.seen = seen

    async def handle_async_request(self, request):
        self.seen.append(request.extensions.get("timeout"))
        return await super().handle_async_request(request)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_httpx_each_attempts_timeout_is_set_for_connect_read_write_and_pool(mode):
    """attempt_timeout=[2, 3] becomes httpx's timeout of each request, for all four of its phases."""
    seen = []
    with Script([BUSY]) as script, no_sleep():
        if mode == "sync":
            transport = RetryTransport(TimeoutSpy(seen), delays=[0.0], attempt_timeout=[2.0, 3.0])
            with httpx.Client(transport=transport) as client:
                assert client.get(script.url).status_code == 200
        else:
            transport = RetryTransport(
                AsyncTimeoutSpy(seen), delays=[0.0], attempt_timeout=[2.0, 3.0]
            )

            async def get():
                async with httpx.AsyncClient(transport=transport) as client:
                    return await client.get(script.url)

            assert asyncio.run(get()).status_code == 200
    phases = ("connect", "read", "write", "pool")
    assert seen == [dict.fromkeys(phases, 2.0), dict.fromkeys(phases, 3.0)]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_httpx_an_attempt_timeout_beyond_any_socket_is_no_limit(mode):
    """attempt_timeout=inf (or 1e10 s, or 10**400): httpx is given None, no limit, and the
    request is sent (a socket's timeout cannot hold it: the sync client raised OverflowError)."""
    seen = []
    for timeout in (math.inf, 1e10, [10**400]):
        with Script([BUSY]) as script, no_sleep():
            if mode == "sync":
                transport = RetryTransport(TimeoutSpy(seen), delays=[0.0], attempt_timeout=timeout)
                with httpx.Client(transport=transport) as client:
                    assert client.get(script.url).status_code == 200
            else:
                transport = RetryTransport(
                    AsyncTimeoutSpy(seen), delays=[0.0], attempt_timeout=timeout
                )

                async def get(transport=transport, url=script.url):
                    async with httpx.AsyncClient(transport=transport) as client:
                        return await client.get(url)

                assert asyncio.run(get()).status_code == 200
    assert seen == [dict.fromkeys(("connect", "read", "write", "pool"))] * 6


def test_httpx_on_result_gets_each_response_unread_and_a_stream_stays_a_stream():
    """on_result is handed the response as the transport gets it: a sync client's predicate
    may read the body itself (response.read()); one that looks at the status only leaves a
    streamed response unread, to be streamed (reading it for on_result broke client.stream:
    StreamConsumed, and an endless stream would hang)."""
    answers = [(200, {}, b"again"), (200, {}, b"done")]
    with Script(answers) as script, no_sleep():
        transport = RetryTransport(delays=[0.0], on_result=lambda r: r.read() == b"again")
        with httpx.Client(transport=transport) as client:
            assert client.get(script.url).content == b"done"
    with Script([(200, {}, b"streamed")]) as script, no_sleep():
        transport = RetryTransport(delays=[0.0], on_result=lambda r: r.status_code == 500)
        with httpx.Client(transport=transport) as client:
            with client.stream("GET", script.url) as response:
                assert b"".join(response.iter_raw()) == b"streamed"


@pytest.mark.parametrize("statuses", [["503"], {True}])
def test_httpx_statuses_must_be_whole_numbers(statuses):
    """A status given as a string or a bool is rejected naming statuses."""
    rejects(lambda: RetryTransport(statuses=statuses), TypeError, "statuses")


def test_httpx_a_transport_of_one_kind_is_refused_by_the_other_client():
    """A sync transport under AsyncClient, or an async one under Client: TypeError saying so."""
    sync_only, async_only = httpx.HTTPTransport(), httpx.AsyncHTTPTransport()
    with Script([]) as script:
        with httpx.Client(transport=RetryTransport(async_only)) as client:
            with pytest.raises(TypeError, match="serves only async clients"):
                client.get(script.url)

        async def get():
            async with httpx.AsyncClient(transport=RetryTransport(sync_only)) as client:
                await client.get(script.url)

        with pytest.raises(TypeError, match="serves only sync clients"):
            asyncio.run(get())
    assert script.seen == []


def test_httpx_closing_the_transport_closes_what_it_wraps():
    """close() and aclose() reach the wrapped transport once it served; before that they do nothing."""
    closed = []

    class Closing(httpx.HTTPTransport):
        def close(self):
            closed.append("sync")
            super().close()

    class AsyncClosing(httpx.AsyncHTTPTransport):
        async def aclose(self):
            closed.append("async")
            await super().aclose()

    RetryTransport(Closing()).close()  # never used: nothing to close
    asyncio.run(RetryTransport(AsyncClosing()).aclose())
    assert closed == []
    with Script([]) as script:
        with httpx.Client(transport=RetryTransport(Closing())) as client:
            client.get(script.url)

        async def get():
            async with httpx.AsyncClient(transport=RetryTransport(AsyncClosing())) as client:
                await client.get(script.url)

        asyncio.run(get())
    assert closed == ["sync", "async"]


@pytest.mark.parametrize(
    "name, peer, extra",
    [
        ("RetryTransport", "httpx", "http"),
        ("Urllib3Retry", "urllib3", "http"),
        ("botocore_retries", "botocore", "aws"),
    ],
)
def test_an_adapter_without_its_peer_says_what_to_install(name, peer, extra, monkeypatch):
    """httpx, urllib3 or botocore missing: ModuleNotFoundError naming the peer and the pip line."""
    import sys

    import backoff_iter.interop as interop

    for module in [m for m in sys.modules if m.split(".")[0] == peer or m.endswith("._" + peer)]:
        monkeypatch.delitem(sys.modules, module)
    monkeypatch.setitem(sys.modules, peer, None)  # import peer fails, as when it is absent
    expected = rf"needs {peer}: pip install {peer} \(in backoff_iter's '{extra}' extra\)"
    with pytest.raises(ModuleNotFoundError, match=expected) as error:
        getattr(interop, name)
    assert error.value.name == peer
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        interop.Nothing  # noqa: B018


# -- a Retry-After too long to sleep (issue 23: 10) --------------------------------------------

FOREVER = "99999999999999"  # seconds: about three million years


def test_urllib3_a_retry_after_too_long_to_sleep_ends_the_request():
    """retry_after_max=inf and Retry-After: 99999999999999: one request, no sleep, urllib3's own error."""
    with Server(failures=None, retry_after=FOREVER) as server, no_sleep() as slept:
        with pytest.raises(requests.exceptions.RetryError):
            session(
                delays=[0.1, 0.1], total=3, status_forcelist=[503], retry_after_max=float("inf")
            ).get(server.url)
    assert len(server.seen) == 1 and slept == []


def test_httpx_a_retry_after_too_long_to_sleep_returns_the_response_sync_and_async():
    """RetryTransport with retry_after_max=inf: the 503 comes back after one request, never an OverflowError or a hang."""
    with Server(failures=None, retry_after=FOREVER) as server, no_sleep() as slept:
        transport = RetryTransport(delays=[0.1, 0.1], retry_after_max=float("inf"))
        with httpx.Client(transport=transport) as client:
            assert client.get(server.url).status_code == 503

        async def fetch():
            async with httpx.AsyncClient(transport=transport) as client:
                return (await client.get(server.url)).status_code

        assert asyncio.run(fetch()) == 503
    assert len(server.seen) == 2 and slept == []


@pytest.mark.parametrize("given", [{"statuses": 503}, {"methods": None}, {"statuses": None}])
def test_statuses_and_methods_that_are_no_collection_are_named(given):
    """RetryTransport(statuses=503) or methods=None: an argument error naming the parameter."""
    [parameter] = given
    rejects(lambda: RetryTransport(**given), TypeError, parameter, "collection")


@pytest.mark.parametrize("lines, slept", [(["120", "120"], 120.0), (["soon", "30", "7"], 30.0)])
def test_a_retry_after_header_on_several_lines_is_honoured_by_both_clients(lines, slept):
    """A proxy may repeat Retry-After; headers.get joins the lines as "120, 120", which no
    value survives, and the hint was lost (the retry came after the schedule's 0.5 s):
    httpx's transport and urllib3's Retry take the longest line that parses."""
    for client in ("httpx", "urllib3"):
        with Script([(503, {"Retry-After": lines}, b"busy")]) as script, no_sleep() as waits:
            if client == "httpx":
                transport = RetryTransport(delays=[0.5], statuses={503})
                with httpx.Client(transport=transport) as http:
                    assert http.get(script.url).status_code == 200
            else:
                retry = Urllib3Retry(delays=[0.5], total=2, status_forcelist=[503])
                assert session_of(retry).get(script.url).status_code == 200
        assert waits == [slept], client


# -- what a request left behind (review of stop 43) ----------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_httpx_a_response_retried_unread_is_closed_when_the_wait_before_the_next_is_cut(mode):
    """on_result retries a 200 it leaves unread; the sleep before the next attempt is cut
    short (Ctrl-C, a task cancelled by its timeout).  That response was never closed: it
    held the pool's one connection for good, and every later request waited for the pool
    in vain (PoolTimeout)."""
    again = (200, {"X-Again": "1"}, b"later")

    def interrupted(seconds):
        raise KeyboardInterrupt

    async def cancelled(seconds):
        asyncio.current_task().cancel()
        await asyncio.sleep(0)

    one_connection = httpx.Limits(max_connections=1)
    timeout = httpx.Timeout(5.0, pool=0.5)
    with Script([again]) as script:
        if mode == "sync":
            inner = httpx.HTTPTransport(limits=one_connection)
            transport = RetryTransport(
                inner, delays=[1.0], sleep=interrupted, on_result=lambda r: "X-Again" in r.headers
            )
            with httpx.Client(transport=transport, timeout=timeout) as client:
                with pytest.raises(KeyboardInterrupt):
                    client.get(script.url)
                with httpx.Client(transport=inner, timeout=timeout) as plain:
                    assert plain.get(script.url).text == "ok"  # the pool has its connection
        else:

            async def get():
                inner = httpx.AsyncHTTPTransport(limits=one_connection)
                transport = RetryTransport(
                    inner, delays=[1.0], sleep=cancelled, on_result=lambda r: "X-Again" in r.headers
                )
                async with httpx.AsyncClient(transport=transport, timeout=timeout) as client:
                    with pytest.raises(asyncio.CancelledError):
                        await client.get(script.url)
                    async with httpx.AsyncClient(transport=inner, timeout=timeout) as plain:
                        return (await plain.get(script.url)).text

            assert asyncio.run(get()) == "ok"
    assert len(script.seen) == 2


def test_httpx_threads_that_send_the_first_requests_at_once_share_one_wrapped_transport(
    monkeypatch,
):
    """A new Client shared by threads: each thread that came while the wrapped
    HTTPTransport was being made (its SSL context takes a while) made one of its own;
    all but the last were lost with their pools, and client.close() never closed their
    connections.  Here a second thread comes while the first one's is being made."""
    made, second = [], []
    thread = threading.Thread(target=lambda: second.append(transport._sync_transport()))

    class Made(httpx.HTTPTransport):
        def __init__(self):
            made.append(self)
            super().__init__()
            if len(made) == 1:  # another thread sends its first request now
                thread.start()
                thread.join(0.2)  # it waits for this one to be made: the join times out

    monkeypatch.setattr(httpx, "HTTPTransport", Made)
    transport = RetryTransport()
    first = transport._sync_transport()
    thread.join()
    assert made == [first] and second == [first]
    transport.close()


def test_urllib3_a_redirect_is_followed_whatever_its_retry_after():
    """retry_after_max=inf and a 302 with Retry-After: 99999999999999.  A redirect is no
    retry and takes no sleep, yet its hint, too long to sleep, ended the request with
    MaxRetryError; a 503's still does."""
    import urllib3

    moved = (302, {"Location": "/moved", "Retry-After": FOREVER}, b"")
    retry = Urllib3Retry(delays=[0.1], retry_after_max=float("inf"))
    with Script([moved]) as script, no_sleep() as slept:
        with urllib3.PoolManager() as pool:
            assert pool.request("GET", script.url, retries=retry).status == 200
    assert [path for _, path, _ in script.seen] == ["/thing", "/moved"] and slept == []
    busy = (503, {"Retry-After": FOREVER}, b"busy")
    with Script([busy]) as script, no_sleep() as slept:
        with urllib3.PoolManager() as pool, pytest.raises(urllib3.exceptions.MaxRetryError):
            pool.request("GET", script.url, retries=retry)
    assert len(script.seen) == 1 and slept == []


# -- review of the HTTP integrations ---------------------------------------------------------


@pytest.mark.parametrize("library", ["asyncio", "trio"])
def test_httpx_an_async_attempt_cut_at_its_timeout_fails_as_httpxs_timeout(library):
    """AsyncClient, attempt_timeout=0.1 and a server whose headers never end (a line
    every 0.02 s: no wait for more reaches httpx's read timeout).  The attempt cut at its
    timeout failed with the builtin TimeoutError, which an ``except httpx.HTTPError``
    misses, ``on=httpx.TransportError`` did not retry and the hooks saw, where a sync
    Client fails with httpx's own: it is httpx's TimeoutException, with its request."""
    import trio

    events = []

    async def get(url):
        transport = RetryTransport(
            delays=[0.0], attempt_timeout=0.1, on=httpx.TransportError, observe=events.append
        )
        async with httpx.AsyncClient(transport=transport) as client:
            return await client.get(url)

    with Script(["stall", "stall"]) as script, no_sleep():
        with pytest.raises(httpx.TimeoutException, match=r"after 0\.1 s") as raised:
            if library == "asyncio":
                asyncio.run(get(script.url))
            else:
                trio.run(get, script.url)
    assert raised.value.request.url == script.url
    assert len(script.seen) == 2  # retried, as on= says
    assert [(e.kind, type(e.outcome)) for e in events] == [
        ("retry", httpx.TimeoutException),
        ("give_up", httpx.TimeoutException),
    ]


def test_httpx_hooks_given_as_a_generator_hear_retried_and_single_requests():
    """observe= takes an iterable: RetryTransport makes two policies of its options
    (one for requests it retries, one for those it sends once), and a generator of
    hooks went to the first alone - a POST's attempt was heard by nobody."""
    events = []
    transport = RetryTransport(delays=[0.0], observe=(hook for hook in [events.append]))
    with Script([BUSY]) as script, no_sleep(), httpx.Client(transport=transport) as client:
        assert client.get(script.url).status_code == 200
        assert client.post(script.url, content=b"x").status_code == 200
    assert [event.kind for event in events] == ["retry", "success", "success"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_httpx_a_request_not_retried_is_still_an_attempt_the_parts_and_hooks_see(mode):
    """A POST (not retried by default) and a PUT of a generator's body (not sent again)
    went straight to the wrapped transport: the rate limiter, throttle and breaker were
    never asked nor told, though they are asked "before every attempt, the first
    included", no hook heard of it, and attempt_timeout was not httpx's timeout.  Each
    is one attempt of a call that retries nothing: every part and hook acts."""
    limiter, throttle, breaker, events, seen = Recorder(), Recorder(), Recorder(), [], []

    def chunks():
        yield b"one"

    def options():
        return {
            "delays": [0.0],
            "attempt_timeout": 2.0,
            "observe": events.append,
            "rate_limiter": limiter,
            "throttle": throttle,
            "breaker": breaker,
            "throttled": lambda response: response.status_code == 429,
        }

    with Script([BUSY, BUSY]) as script, no_sleep() as slept:
        if mode == "sync":
            with httpx.Client(transport=RetryTransport(TimeoutSpy(seen), **options())) as client:
                statuses = [
                    client.post(script.url, content=b"x").status_code,
                    client.put(script.url, content=chunks()).status_code,
                ]
        else:

            async def achunks():
                yield b"one"

            async def send():
                transport = RetryTransport(AsyncTimeoutSpy(seen), **options())
                async with httpx.AsyncClient(transport=transport) as client:
                    return [
                        (await client.post(script.url, content=b"x")).status_code,
                        (await client.put(script.url, content=achunks())).status_code,
                    ]

            statuses = asyncio.run(send())
    assert statuses == [503, 503] and len(script.seen) == 2 and slept == []
    assert limiter.log == ["acquire", False] * 2
    assert throttle.log == ["check", True] * 2
    assert breaker.log == ["check", False] * 2
    assert [(e.kind, e.number, e.outcome.status_code) for e in events] == [("give_up", 1, 503)] * 2
    assert seen == [dict.fromkeys(("connect", "read", "write", "pool"), 2.0)] * 2


def test_httpx_an_open_breaker_refuses_a_post_too():
    """Two 503s to GETs open the breaker; a POST then is refused with BrokenCircuitError
    and never reaches the server (it went, as if there were no breaker)."""
    from backoff_iter import BrokenCircuitError, CircuitBreaker

    breaker = CircuitBreaker(failure_ratio=0.5, minimum_throughput=2, clock=lambda: 0.0)
    with Script([BUSY, BUSY]) as script, no_sleep():
        transport = RetryTransport(delays=[], breaker=breaker)
        with httpx.Client(transport=transport) as client:
            assert [client.get(script.url).status_code for _ in range(2)] == [503, 503]
            with pytest.raises(BrokenCircuitError):
                client.post(script.url, content=b"x")
    assert [method for method, _, _ in script.seen] == ["GET", "GET"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_httpx_a_request_not_retried_comes_back_unread(mode):
    """A streamed POST answered 503: nothing retries it, so nothing reads it first."""
    with Script([BUSY]) as script, no_sleep():
        transport = RetryTransport(delays=[0.0])
        if mode == "sync":
            with httpx.Client(transport=transport) as client:
                with client.stream("POST", script.url, content=b"x") as response:
                    consumed = response.is_stream_consumed
        else:

            async def post():
                async with httpx.AsyncClient(transport=transport) as client:
                    async with client.stream("POST", script.url, content=b"x") as response:
                        return response.is_stream_consumed

            consumed = asyncio.run(post())
    assert not consumed and len(script.seen) == 1


def test_httpx_statuses_and_methods_given_as_one_shot_iterables_are_kept_whole():
    """statuses=(s for s in [503]) and methods=map(str.upper, ["put"]): their check used
    them up, and the transport kept empty sets - it retried nothing, saying nothing."""
    transport = RetryTransport(
        delays=[0.0], statuses=(code for code in [503]), methods=map(str.upper, ["put"])
    )
    assert transport.statuses == {503} and transport.methods == {"PUT"}
    with Script([BUSY]) as script, no_sleep() as slept:
        with httpx.Client(transport=transport) as client:
            assert client.put(script.url, content=b"x").status_code == 200
    assert len(script.seen) == 2 and slept == [0.0]


@pytest.mark.parametrize(
    "given", [{"backoff_factor": 0.5}, {"backoff_max": 30}, {"backoff_jitter": 0.1}]
)
def test_urllib3_its_own_backoff_is_refused_naming_it(given):
    """Urllib3Retry(backoff_factor=0.5): the sleeps come from delays=, and urllib3's
    own backoff was ignored without a word (a retry slept the default schedule's delay,
    not the backoff asked for); it is an argument error naming it and saying delays=.
    The copies urllib3 makes (.new(), with those options at their defaults) still work."""
    import urllib3

    [(parameter, value)] = given.items()
    if parameter not in urllib3.util.Retry.__init__.__code__.co_varnames:
        pytest.skip(f"this urllib3 has no {parameter}")
    rejects(lambda: Urllib3Retry(**given), ValueError, parameter, str(value), "delays=")
    retry = Urllib3Retry(delays=[0.25], status_forcelist=[503])
    with Script([BUSY]) as script, no_sleep() as slept:
        assert session_of(retry.new(total=3)).get(script.url).status_code == 200
    assert slept == [0.25]


@pytest.mark.parametrize("delays", [[0.5, 1.0], (0.5,), lambda: [0.5], iter([0.5])])
def test_urllib3_delays_given_first_are_refused_naming_total(delays):
    """Urllib3Retry([0.5, 1.0]) - the delays first, as the drivers take them - is refused
    naming total, urllib3's first argument, and saying delays=: it was taken as total and
    the first retry failed inside urllib3 ("unsupported operand type(s) for -=: 'list'
    and 'int'").  A count, False and None stay urllib3's."""
    rejects(lambda: Urllib3Retry(delays), TypeError, "total", "go by name", "count of retries")
    for total in (3, False, None):
        assert Urllib3Retry(total, delays=[0.25]).total is total
    retry = Urllib3Retry(3, delays=[0.25], status_forcelist=[503])
    with Script([BUSY]) as script, no_sleep() as slept:
        assert session_of(retry).get(script.url).status_code == 200
    assert slept == [0.25]


@pytest.mark.parametrize("option", ["on", "budget", "deadline", "on_result", "before_sleep"])
def test_urllib3_a_drivers_option_it_does_not_take_is_refused_saying_what_it_takes(option):
    """Urllib3Retry(on=OSError): urllib3 decides what it retries, and its own
    TypeError ("Retry.__init__() got an unexpected keyword argument 'on'")
    said nothing of what to do; now refused naming the option and what
    Urllib3Retry takes of the drivers' options."""
    rejects(
        lambda: Urllib3Retry(delays=[0.5], **{option: None}),
        TypeError,
        option,
        "does not take",
        "status_forcelist",
        "delays=, sleep=",
    )
    assert Urllib3Retry(delays=[0.5], status_forcelist=[503], name="fetch").name == "fetch"


def test_urllib3_an_async_sleep_is_refused_as_it_is_given():
    """Urllib3Retry(sleep=<async def>): urllib3 never awaits it, and it was taken, to
    fail inside urllib3's urlopen at the first retry of an outage; refused when made,
    as a sync retrying() loop refuses it."""

    async def asleep(seconds):
        pass

    rejects(lambda: Urllib3Retry(delays=[0.5], sleep=asleep), TypeError, "sleep", "asleep")


@pytest.mark.parametrize("delays", [[0.5, 1.0], (0.5,), lambda: [0.5], iter([0.5])])
def test_httpx_delays_given_first_are_refused_saying_they_go_by_name(delays):
    """RetryTransport([0.5, 1.0]) - the delays first, as the drivers take them
    - is refused naming transport and saying delays=; a string there is no
    schedule, and is not told so."""
    rejects(lambda: RetryTransport(delays), TypeError, "transport", "by name", "delays=[")
    with pytest.raises(TypeError) as raised:
        RetryTransport("http://x")  # type: ignore[arg-type]
    assert "by name" not in str(raised.value)


def test_tenacity_schedules_made_in_threads_at_once_each_end_with_their_stop(
    switching_often, monkeypatch
):
    """8 threads make the first tenacity_schedule of the process at once, 100 times over:
    every stop is one the wait knows, so each call ends with its own error where its
    delays end (the classes made on first use were made once per thread, the last kept:
    the other threads' stops were strangers to it, and their waits raised RuntimeError)."""
    from backoff_iter import interop

    for _ in range(100):
        monkeypatch.setattr(interop, "_TENACITY", None)  # as on first use
        barrier, made = threading.Barrier(8), []

        def make(barrier=barrier, made=made):
            barrier.wait()
            made.append(tenacity_schedule([0.5]))

        in_threads(make)
        assert len(made) == 8
        for wait, stop in made:
            slept = []
            retrying = tenacity.Retrying(wait=wait, stop=stop, reraise=True, sleep=slept.append)
            with pytest.raises(OSError, match="flaky"):
                retrying(failing(5))
            assert slept == [0.5]


def fetched(transport, url, mode):
    """GET *url* through *transport* with an httpx.Client ("sync") or an AsyncClient."""
    if mode == "sync":
        with httpx.Client(transport=transport) as client:
            return client.get(url)

    async def get():
        async with httpx.AsyncClient(transport=transport) as client:
            return await client.get(url)

    return asyncio.run(get())


#: A 503 whose body says it is gzip and is not (a proxy's error page, say).
BAD_GZIP = (503, {"Content-Encoding": "gzip", "Retry-After": "1"}, b"this is no gzip")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_httpx_retries_a_status_whose_body_does_not_decode(mode):
    """A retried 503 whose gzip body is not: retried after its Retry-After like any 503.
    Its body was decoded as it was read, and httpx's DecodingError ended the call at the
    first attempt."""
    with Script([BAD_GZIP]) as script, no_sleep() as slept:
        transport = RetryTransport(delays=[0.5])
        response = fetched(transport, script.url, mode)
    assert response.status_code == 200 and response.text == "ok"
    assert len(script.seen) == 2 and slept == [1.0]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_httpx_the_last_retried_status_comes_back_as_httpx_would_give_it(mode):
    """The last response of retried statuses comes back unread, as plain httpx gives it: its
    raw bytes (iter_raw), its elapsed time once read, and - for a body that does not
    decode - httpx's DecodingError only when it is read, not in place of the response.
    It came back read already: no iter_raw (StreamConsumed), no elapsed (RuntimeError)."""
    with Script([BAD_GZIP] * 3) as script, no_sleep() as slept:
        transport = RetryTransport(delays=[0.0])
        if mode == "sync":
            with httpx.Client(transport=transport) as client:
                with client.stream("GET", script.url) as response:
                    raw = b"".join(response.iter_raw())
                elapsed = response.elapsed
        else:

            async def get():
                async with httpx.AsyncClient(transport=transport) as client:
                    async with client.stream("GET", script.url) as response:
                        raw = b"".join([part async for part in response.aiter_raw()])
                    return response, raw, response.elapsed

            response, raw, elapsed = asyncio.run(get())
        assert response.status_code == 503 and raw == b"this is no gzip"
        assert elapsed.total_seconds() >= 0.0 and slept == [1.0]
        with httpx.Client(transport=RetryTransport(delays=[])) as client:
            with client.stream("GET", script.url) as response, pytest.raises(httpx.DecodingError):
                response.read()  # the reader's to decode, as without the transport


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_httpx_streams_a_response_it_does_not_retry(mode):
    """A 200's body comes to the reader as the server sends it: its first half is read
    while the server still holds the second (a download is never held whole by the
    transport; only a retried status's body is read before it comes back)."""
    with Script(["drip"]) as script:
        transport = RetryTransport(delays=[0.0])
        if mode == "sync":
            with httpx.Client(transport=transport) as client:
                with client.stream("GET", script.url) as response:
                    parts = response.iter_raw()
                    first = next(parts)
                    script.go.set()
                    body = first + b"".join(parts)
        else:

            async def get():
                async with httpx.AsyncClient(transport=transport) as client:
                    async with client.stream("GET", script.url) as response:
                        parts = response.aiter_raw()
                        first = await parts.__anext__()
                        script.go.set()
                        return first + b"".join([part async for part in parts])

            body = asyncio.run(get())
    assert body == b"first halfsecond one" and not script.held_too_long


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_httpx_hooks_read_the_body_of_a_retried_status(mode):
    """retry_after= and the hooks are handed a response retried for its status read: a hint
    in its JSON body is honoured (it came to them unread once it was read raw for the
    client: ResponseNotRead ended the call)."""
    wait = (503, {"Content-Type": "application/json"}, b'{"wait": 2}')
    seen = []
    with Script([wait]) as script, no_sleep() as slept:
        transport = RetryTransport(
            delays=[0.5],
            retry_after=lambda response: response.json()["wait"],
            observe=lambda event: seen.append(
                event.outcome.text if event.kind == "retry" else event.kind
            ),
        )
        response = fetched(transport, script.url, mode)
    assert response.status_code == 200 and slept == [2.0]
    assert seen == ['{"wait": 2}', "success"]  # (a response not retried comes unread)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_httpx_a_response_read_as_it_was_made_is_retried_as_it_is(mode):
    """httpx.MockTransport's responses are read as they are made: a retried one is taken
    as it is (reading it raw again raised StreamConsumed)."""
    answers = iter([httpx.Response(503, json={"wait": 1}), httpx.Response(200, text="ok")])
    server = httpx.MockTransport(lambda request: next(answers))
    transport = RetryTransport(server, delays=[0.5], retry_after=lambda r: r.json()["wait"])
    with no_sleep() as slept:
        response = fetched(transport, "http://127.0.0.1/thing", mode)
    assert response.text == "ok" and slept == [1.0]


def test_a_star_import_takes_the_adapters_whose_peer_is_installed():
    """`from backoff_iter.interop import *` works with httpx absent, and brings the others."""
    code = (
        "import sys; sys.modules['httpx'] = None\n"
        "from backoff_iter.interop import *\n"
        "print(sorted(name for name in dir() if not name.startswith('_')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "['Urllib3Retry', 'backoff_wait_gen', 'botocore_retries', 'sys',"
        " 'tenacity_schedule', 'tenacity_wait']\n"
    )


def test_a_sync_http_clients_retry_in_an_event_loop_is_the_clients_own_blocking(monkeypatch):
    """requests (through Urllib3Retry) and httpx's sync client (through
    RetryTransport) called in an ``async def`` block the event loop with all
    their I/O, retries and all: their retries' sleeps warn of nothing (a
    sync loop of the library's own would, naming the user's line)."""
    import warnings

    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)

    async def fetch(first: str, second: str) -> tuple[int, int]:
        response = session(delays=[0.5], total=2, status_forcelist=[503]).get(first)
        with httpx.Client(transport=RetryTransport(delays=[0.25])) as client:
            return response.status_code, client.get(second).status_code

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with Server(failures=1) as first, Server(failures=1) as second:
            assert asyncio.run(fetch(first.url, second.url)) == (200, 200)
    assert slept == [0.5, 0.25]
