"""The adapters against the real peers: tenacity, backoff, requests/urllib3 and httpx
talking to a local HTTP server on 127.0.0.1 that each test starts."""

from __future__ import annotations

import asyncio
import email.utils
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import count, islice

import pytest
from checks import rejects

from backoff_iter import TokenBucket, constant, exponential
from backoff_iter.interop import RetryTransport, Urllib3Retry, backoff_wait_gen, tenacity_wait
from backoff_iter.testing import no_sleep

tenacity = pytest.importorskip("tenacity")
backoff = pytest.importorskip("backoff")
requests = pytest.importorskip("requests")
httpx = pytest.importorskip("httpx")


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


def in_seconds(seconds):
    """An HTTP-date *seconds* from now (whole seconds, as the format has)."""
    return email.utils.formatdate(time.time() + seconds, usegmt=True)


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


def test_tenacity_running_out_of_delays_says_so():
    """Delays shorter than tenacity's stop: a clear RuntimeError, not a silent default."""
    retrying = tenacity.Retrying(
        wait=tenacity_wait(lambda: [0.1]), sleep=lambda s: None, stop=tenacity.stop_after_attempt(5)
    )
    with pytest.raises(RuntimeError, match="delays"):
        retrying(failing(3))


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
    header = in_seconds(30) if retry_after == "date" else retry_after
    with Server(failures=3, retry_after=header) as server, no_sleep() as slept:
        response = session(delays=lambda: exponential(0.5), total=5, status_forcelist=[503]).get(
            server.url
        )
    assert response.status_code == 200 and response.text == "ok"
    assert server.seen == ["GET"] * 4
    if expected == "about 30":
        assert len(slept) == 3 and all(28 <= s <= 30 for s in slept)
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
    header = in_seconds(30) if retry_after == "date" else retry_after
    for mode in ("sync", "async"):
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
            assert len(slept) == 3 and all(28 <= s <= 30 for s in slept)
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
        (lambda: tenacity_wait(iter([1.0])), "factory"),
        (lambda: tenacity_wait(3), "factory"),
        (lambda: backoff_wait_gen([1.0, 2.0]), "factory"),
        (lambda: Urllib3Retry(delays=exponential(1)), "delays"),
        (lambda: RetryTransport(delays=None), "delays"),
        (lambda: RetryTransport(delays=lambda: [1.0], statuses="503"), "statuses"),
        (lambda: RetryTransport("http://x", delays=lambda: [1.0]), "transport"),
        (lambda: RetryTransport(delays=lambda: [1.0], deadline=-1), "deadline"),
    ],
)
def test_bad_arguments_name_the_parameter(make, word):
    """A non-callable factory, or one that is an iterator, fails at construction."""
    rejects(make, (TypeError, ValueError), word)


def test_a_factory_returning_a_non_iterable_names_it():
    """The factory's result is checked when a schedule is made."""
    retrying = tenacity.Retrying(
        wait=tenacity_wait(lambda: 5), sleep=lambda s: None, stop=tenacity.stop_after_attempt(3)
    )
    with pytest.raises(TypeError, match="factory"):
        retrying(failing(1))
