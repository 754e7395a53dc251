"""The decorator people pick: safe and loud by default.

An exception class where the delays go is refused; with no ``on=`` only
transient failures are retried; every retry is logged at WARNING; a
schedule with no end is warned about.  Every form of driver is checked.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import socket
import ssl
import subprocess
import sys
import threading
import time
import warnings
from itertools import islice
from pathlib import Path
from urllib.error import HTTPError

import pytest
from checks import rejects
from test_drivers import RUNNERS, FakeTime, Operation, each_driver

from backoff_iter import (
    ArgumentTypeError,
    aretrying,
    constant,
    hedged,
    instrument,
    is_transient,
    retry,
    retrying,
)
from backoff_iter.instrument.logs import _duration
from backoff_iter.testing import no_sleep

# -- 1. an exception class where the delays go ---------------------------------------------------


@pytest.mark.parametrize(
    ("given", "meant"),
    [
        (ConnectionError, "on=ConnectionError"),
        ((ConnectionError, TimeoutError), "on=(ConnectionError, TimeoutError)"),
    ],
)
def test_an_exception_class_as_delays_is_refused_saying_on_was_meant(given, meant):
    """@retry(ConnectionError) and @retry((A, B)) raise at once, naming delays and the on= meant."""
    rejects(lambda: retry(given), TypeError, "delays", meant, "was probably meant")
    rejects(lambda: retrying(given), TypeError, "delays", meant)
    rejects(lambda: aretrying(given), TypeError, "delays", meant)


def test_an_exception_class_as_delays_never_becomes_the_decorated_function():
    """The old trap: @retry(ConnectionError) made the function a ConnectionError; now nothing is decorated."""
    with pytest.raises(ArgumentTypeError):

        @retry(ConnectionError)
        def fetch():  # pragma: no cover - never decorated
            return "data"


# -- 2. with no on=, transient failures only ---------------------------------------------------

PROGRAMMING_ERRORS = [
    KeyError("id"),
    TypeError("bad"),
    AttributeError("x"),
    AssertionError(),
    ValueError(),
    RuntimeError(),
]


@each_driver
@pytest.mark.parametrize("error", PROGRAMMING_ERRORS, ids=lambda e: type(e).__name__)
def test_with_no_on_a_programming_error_fails_at_once(run, error):
    """KeyError, TypeError, AttributeError, AssertionError, ValueError: one attempt, no sleep."""
    time, operation = FakeTime(), Operation([error, "never"])
    with pytest.raises(type(error)):
        run([1.0, 1.0], operation, time)
    assert operation.calls == 1 and time.slept == []


@each_driver
@pytest.mark.parametrize(
    "error",
    [ConnectionResetError(), ConnectionRefusedError(), OSError(), TimeoutError()],
    ids=lambda e: type(e).__name__,
)
def test_with_no_on_a_transient_failure_is_retried(run, error):
    """Connection errors and timeouts are retried by default."""
    time, operation = FakeTime(), Operation([error, error, "ok"])
    assert run([1.0, 2.0], operation, time) == "ok"
    assert time.slept == [1.0, 2.0]


@each_driver
def test_on_exception_keeps_retrying_everything(run):
    """on=Exception retries a KeyError as before."""
    time, operation = FakeTime(), Operation([KeyError("id"), "ok"])
    assert run([1.0], operation, time, on=Exception) == "ok"


def test_the_transport_errors_of_the_http_clients_are_transient():
    """httpx's, requests' and urllib3's connection and timeout errors; their status errors
    only for a status worth retrying."""
    import httpx
    import requests
    import urllib3.exceptions as urllib3

    request = httpx.Request("GET", "http://127.0.0.1/")
    transient = [
        httpx.ConnectError("refused", request=request),
        httpx.ReadTimeout("slow", request=request),
        httpx.RemoteProtocolError("cut", request=request),
        requests.ConnectionError(),
        requests.Timeout(),
        urllib3.ProtocolError("cut"),
        urllib3.NewConnectionError(None, "refused"),
        urllib3.ReadTimeoutError(None, "/", "slow"),
        urllib3.ConnectTimeoutError(),
        asyncio.TimeoutError(),
    ]
    assert [is_transient(error) for error in transient] == [True] * len(transient)
    for status, retried in ((503, True), (404, False), (500, False)):
        response = httpx.Response(status, request=request)
        status_error = httpx.HTTPStatusError(str(status), request=request, response=response)
        assert is_transient(status_error) is retried, status
    assert not is_transient(urllib3.LocationParseError("x"))


def test_an_oserror_that_is_no_failure_of_a_connection_is_not_transient():
    """Not every OSError: a file missing or refused, a certificate that does not
    verify, and requests' errors of the request itself (every requests error is
    an OSError) fail the same way again; a bare OSError and the network's are
    retried (issue 23's default names OSError)."""
    import io
    import socket
    import ssl

    import httpx
    import requests

    request = httpx.Request("GET", "http://127.0.0.1/")
    permanent = [
        FileNotFoundError(2, "no such file", "app.toml"),
        PermissionError(13, "denied"),
        IsADirectoryError(),
        io.UnsupportedOperation("not readable"),
        ssl.SSLCertVerificationError("certificate verify failed"),
        httpx.UnsupportedProtocol("ftp://", request=request),
        httpx.LocalProtocolError("bad header"),
        requests.exceptions.InvalidURL(),
        requests.exceptions.MissingSchema(),
        requests.exceptions.TooManyRedirects(),
        requests.JSONDecodeError("Expecting value", "<html>", 0),
        requests.HTTPError("404 Client Error"),
    ]
    assert [is_transient(error) for error in permanent] == [False] * len(permanent)
    transient = [
        OSError(),
        OSError(113, "No route to host"),  # EHOSTUNREACH: a plain OSError
        socket.gaierror(-3, "Temporary failure in name resolution"),
        ssl.SSLEOFError("EOF occurred in violation of protocol"),
        requests.exceptions.ChunkedEncodingError(),
        requests.exceptions.SSLError(),  # a requests ConnectionError
        httpx.TransportError("x"),
    ]
    assert [is_transient(error) for error in transient] == [True] * len(transient)


def _requests_get(url):
    import requests

    response = requests.get(url, timeout=5)
    response.raise_for_status()
    return response.text


def _httpx_get(url):
    import httpx

    response = httpx.get(url, timeout=5)
    response.raise_for_status()
    return response.text


def _urllib_get(url):
    import urllib.request

    with urllib.request.urlopen(url, timeout=5) as response:  # raises HTTPError itself
        return response.read().decode()


GETS = [_requests_get, _httpx_get, _urllib_get]
GET_IDS = ["requests", "httpx", "urllib"]


@contextlib.contextmanager
def untrusted_tls_server():
    """A TLS server on 127.0.0.1 whose certificate (tests/data/untrusted.pem,
    self-signed) no client trusts: every handshake fails at the client's
    check.  Yields its URL and the list of connections it accepted."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(Path(__file__).parent / "data" / "untrusted.pem")
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)  # closing it would not wake an accept() that waits
    accepted, over = [], threading.Event()

    def serve():
        while not over.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:  # a timeout: is the test over?
                continue
            accepted.append(connection)
            connection.settimeout(5)
            with contextlib.suppress(OSError):  # the client refuses the certificate
                context.wrap_socket(connection, server_side=True).close()
            connection.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{listener.getsockname()[1]}/", accepted
    finally:
        over.set()
        thread.join(5)
        listener.close()


@pytest.mark.parametrize("get", GETS, ids=GET_IDS)
def test_a_certificate_that_does_not_verify_fails_at_once_in_every_http_client(get):
    """A bare ``@retry`` around a request to a server whose certificate does not
    verify tried it once: urllib wraps the ssl module's error in a ``URLError``
    (its ``reason``), requests in an ``SSLError`` (a ``ConnectionError``, four
    links down), httpx in a ``ConnectError`` (its ``__cause__``) - each an
    ``OSError`` or transport error that was retried ten times."""
    with untrusted_tls_server() as (url, accepted), no_sleep() as slept:

        @retry
        def fetch():
            return get(url)

        with pytest.raises(Exception) as raised:
            fetch()
    assert isinstance(raised.value, (OSError, importlib.import_module("httpx").TransportError))
    assert not is_transient(raised.value)
    assert (len(accepted), slept) == (1, [])


@pytest.mark.parametrize("get", GETS, ids=GET_IDS)
def test_a_refused_connection_in_every_http_client_is_still_transient(get):
    """The same wrappers around a connection refused (a port nobody listens on):
    retried, as the certificate check must not make every wrapper permanent."""
    with socket.socket() as held, pytest.raises(Exception) as raised:
        held.bind(("127.0.0.1", 0))  # bound, never listening: refused, and no one else's
        get(f"http://127.0.0.1:{held.getsockname()[1]}/")
    assert is_transient(raised.value)


def test_a_certificate_error_deep_in_a_chain_is_found_and_a_hostile_chain_never_breaks_it():
    """The walk down causes, contexts, reasons and arguments: a certificate error
    found through each link; a cycle and a chain longer than the walk end it
    (transient, as without the walk); an exception whose ``args`` or ``reason``
    raises is looked past."""
    certificate = ssl.SSLCertVerificationError("certificate verify failed")

    def caused(link):
        error = ConnectionError("wrapped")
        error.__cause__ = link
        return error

    def context(link):
        error = ConnectionError("wrapped")
        error.__context__ = link
        return error

    def reason(link):
        error = ConnectionError("wrapped")
        error.reason = link
        return error

    for wrap in (caused, context, reason, lambda link: ConnectionError("wrapped", link)):
        assert not is_transient(wrap(certificate)), wrap
        assert is_transient(wrap(ConnectionResetError())), wrap
    assert not is_transient(caused(reason(ConnectionError(context(certificate)))))
    deep = certificate
    for _ in range(40):
        deep = caused(deep)
    assert is_transient(deep)  # past the walk's reach: looked no further
    first, second = ConnectionError("a"), ConnectionError("b")
    first.__cause__, second.__cause__ = second, first
    assert is_transient(first)

    class Hostile(ConnectionError):
        @property
        def args(self):
            raise RuntimeError("args")

        @property
        def reason(self):
            raise RuntimeError("reason")

    hostile = Hostile()
    hostile.__cause__ = certificate
    assert not is_transient(hostile)  # its args and reason raise: its cause is read all the same
    assert is_transient(caused(Hostile()))  # nothing found past what raised: retried
    assert not is_transient(caused(ConnectionError(certificate)))

    class Proxy:  # an argument whose __class__ raises, as an unbound proxy's does
        @property
        def __class__(self):
            raise RuntimeError("unbound")

    assert is_transient(ConnectionError(Proxy()))
    assert not is_transient(ConnectionError(Proxy(), certificate))

    class Unsure(ConnectionError):  # whether its context counts: asking raises
        @property
        def __suppress_context__(self):
            raise RuntimeError("unsure")

    assert not is_transient(Unsure(certificate))  # its arguments are read all the same

    class Mismatch(ssl.SSLCertVerificationError):  # a subclass of the ssl module's
        pass

    assert not is_transient(caused(Mismatch("hostname mismatch")))


def test_the_walk_takes_in_twelve_exceptions_and_no_more():
    """The bound, exactly: a certificate error that is the twelfth exception
    looked at is found, the thirteenth is not (a chain of causes, one each)."""

    def chain(wrappers):
        error = ssl.SSLCertVerificationError("certificate verify failed")
        for _ in range(wrappers):
            wrapper = ConnectionError("wrapped")
            wrapper.__cause__ = error
            error = wrapper
        return error

    assert [is_transient(chain(wrappers)) for wrappers in (10, 11, 12)] == [False, False, True]


def test_a_certificate_error_already_queued_is_found_past_the_walks_bound():
    """The bound stops what is queued, not what was: a certificate error among an
    error's own arguments is found though its siblings hold more than the walk
    takes in."""
    busy = [
        Exception("busy", ValueError(), KeyError(), TypeError(), LookupError()) for _ in range(3)
    ]
    wrapper = ConnectionError(busy[0], ssl.SSLCertVerificationError("certificate verify failed"))
    wrapper.__cause__, wrapper.__context__ = busy[1], busy[2]
    assert not is_transient(wrapper)


def test_an_error_raised_from_none_or_its_own_cause_is_not_held_to_a_handled_certificate():
    """A certificate refused and handled, then a mirror tried that reset the
    connection: raised ``from None`` (or from its own cause) the reset is
    retried; raised while handling it, without ``from``, it is taken as refused,
    as is said."""

    def mirror(how):
        try:
            raise ssl.SSLCertVerificationError("certificate verify failed")
        except ssl.SSLError:
            reset = ConnectionResetError("the mirror reset")
            if how == "from None":
                raise reset from None
            if how == "from its cause":
                raise reset from TimeoutError()
            raise reset  # noqa: B904 - raised in the handler: the case under test

    outcomes = {}
    for how in ("from None", "from its cause", "in the handler"):
        try:
            mirror(how)
        except ConnectionResetError as error:
            outcomes[how] = is_transient(error)
    assert outcomes == {"from None": True, "from its cause": True, "in the handler": False}


def test_a_status_error_whose_status_is_no_number_or_raises_is_not_transient():
    """A status error's status is read from what the user's code may have built:
    an unhashable one, or a ``code`` property that raises, fails at once, as an
    unknown status does - never a TypeError out of the filter."""
    import requests

    class Answer:
        def __init__(self):
            self.status_code = [503]  # unhashable: "in" a frozenset raised TypeError

    class Raising(HTTPError):
        @property
        def code(self):
            raise RuntimeError("no code")

        @code.setter
        def code(self, value):  # HTTPError.__init__ sets it
            pass

    assert not is_transient(requests.HTTPError("503", response=Answer()))

    class Denied(PermissionError):
        code = 503  # a code of its own: no urllib HTTPError, no HTTP status

    class Hash(int):
        def __hash__(self):
            raise RuntimeError("no hash")

    class Status:
        def __init__(self, status_code):
            self.status_code = status_code

    assert not is_transient(Denied())
    assert not is_transient(requests.HTTPError("503", response=Status(503.0)))  # no int
    assert not is_transient(requests.HTTPError("no answer"))
    assert not is_transient(requests.HTTPError("503", response=Status(Hash(503))))
    assert is_transient(requests.HTTPError("503", response=Status(503)))
    assert not is_transient(Raising("http://127.0.0.1/", 503, "down", {}, None))
    assert is_transient(HTTPError("http://127.0.0.1/", 503, "down", {}, None))


@pytest.mark.parametrize("get", GETS, ids=GET_IDS)
@pytest.mark.parametrize(
    ("status", "retried"), [(404, False), (400, False), (503, True), (429, True), (502, True)]
)
def test_a_status_error_is_transient_only_for_a_status_worth_retrying(get, status, retried):
    """``raise_for_status()`` of a real answer from a local server, by requests
    and by httpx, and urllib's ``HTTPError`` (an ``OSError``, retried for a 404
    once): a 404 fails at once under a bare ``@retry``, a 503 or a 429
    is retried (as the HTTP integrations retry them), as their answers say."""
    import httpx
    import requests
    from test_interop import Server

    with Server(failures=1, status=status) as server, no_sleep() as slept:

        @retry([0.5])
        def fetch():
            return get(server.url)

        if retried:
            assert fetch() == "ok"
        else:
            with pytest.raises((requests.HTTPError, httpx.HTTPStatusError, HTTPError)):
                fetch()
    assert len(server.seen) == (2 if retried else 1)
    assert slept == ([0.5] if retried else [])


def test_a_group_is_transient_when_every_exception_in_it_is():
    """A TaskGroup's group of connection errors is retried; one holding a KeyError is not.
    Before 3.11 the group is the exceptiongroup backport's, which trio's nurseries raise."""
    if sys.version_info >= (3, 11):
        group_class = ExceptionGroup  # noqa: F821 - 3.11+
    else:
        group_class = importlib.import_module("exceptiongroup").ExceptionGroup
    group = group_class("tasks", [ConnectionError(), group_class("inner", [TimeoutError()])])
    assert is_transient(group)
    assert not is_transient(group_class("tasks", [ConnectionError(), KeyError()]))


def test_knowing_the_http_clients_imports_none_of_them():
    """is_transient looks only at the libraries already loaded: none is imported to ask."""
    code = (
        "import sys; from backoff_iter import is_transient; is_transient(KeyError());"
        " print(is_transient(ConnectionResetError()), is_transient(KeyError()),"
        " sorted(m for m in ('httpx', 'requests', 'urllib3', 'ssl') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "True False []"  # no ssl: no certificate to look for


def test_hedged_calls_fail_at_once_on_a_programming_error():
    """hedged() with no on=: a KeyError cancels nothing more and propagates from the first attempt."""
    calls = []

    async def lookup():
        calls.append(1)
        raise KeyError("id")

    with pytest.raises(KeyError):
        asyncio.run(hedged(lookup, [10.0, 10.0]))  # no hedge is due before it fails
    assert calls == [1]


# -- 3. retries are logged by default ------------------------------------------------------------


@pytest.fixture
def slept(monkeypatch):
    """time.sleep and asyncio.sleep record what they are asked instead of sleeping."""
    seconds = []

    async def asleep(delay):
        seconds.append(delay)

    monkeypatch.setattr(time, "sleep", seconds.append)
    monkeypatch.setattr(asyncio, "sleep", asleep)
    return seconds


def records(caplog):
    """The backoff_iter logger's records: (level, message)."""
    return [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "backoff_iter"]


def test_a_bare_retry_runs_a_key_error_once_and_logs_nothing(caplog, slept):
    """The new user's trap of before: a bare @retry retried a KeyError ten times, silently."""
    calls = []

    @retry
    def lookup():
        calls.append(1)
        return {}["id"]

    caplog.set_level(logging.DEBUG)
    with pytest.raises(KeyError):
        lookup()
    assert calls == [1] and slept == [] and records(caplog) == []


def test_a_bare_retry_logs_a_warning_per_retry_of_a_connection_error(caplog, slept):
    """Two connection errors, then success: two WARNING lines naming the call, attempt, delay and error."""
    operation = Operation([ConnectionResetError("reset by peer")] * 2)

    @retry
    def fetch():
        return operation()

    caplog.set_level(logging.DEBUG)
    assert fetch() == "ok"
    logged = records(caplog)
    name = f"{__name__}.test_a_bare_retry_logs_a_warning_per_retry_of_a_connection_error.<locals>.fetch"
    assert [level for level, _ in logged] == ["WARNING", "WARNING"]
    for (_, message), number, delay in zip(logged, (1, 2), slept):
        # the default schedule is jittered: the delay as the log writes every delay
        # (milliseconds below 0.1 s: pinned in test_logs_and_testing)
        assert message == (
            f"{name}: attempt {number} failed (ConnectionResetError: reset by peer);"
            f" retrying in {_duration(delay)}"
        )


@each_driver
def test_every_driver_logs_its_retries_and_its_give_up(run, caplog):
    """retrying, aretrying and @retry (sync and async): a WARNING per retry, one for giving up."""
    caplog.set_level(logging.DEBUG)
    with pytest.raises(OSError):
        run([0.5, 1.0], Operation([OSError("down")] * 3), FakeTime(), name="fetch")
    assert records(caplog) == [
        ("WARNING", "fetch: attempt 1 failed (OSError: down); retrying in 0.50 s"),
        ("WARNING", "fetch: attempt 2 failed (OSError: down); retrying in 1.00 s"),
        ("WARNING", "fetch: attempt 3 failed (OSError: down); giving up (exhausted)"),
    ]
    record = next(r for r in caplog.records if r.name == "backoff_iter")
    assert (record.retry_name, record.retry_attempt, record.retry_delay) == ("fetch", 1, 0.5)


@each_driver
def test_the_default_log_hears_retries_beside_a_policys_own_hooks(run, caplog):
    """observe= adds to the default log, never replaces it: both hear the retries."""
    caplog.set_level(logging.DEBUG)
    seen = []
    with pytest.raises(OSError):
        run([0.5], Operation([OSError("down")] * 2), FakeTime(), name="fetch", observe=seen.append)
    assert [event.kind for event in seen] == ["retry", "give_up"]
    assert [level for level, _ in records(caplog)] == ["WARNING", "WARNING"]


@each_driver
def test_a_policys_own_retry_logger_logs_each_retry_once(run, caplog):
    """observe=log_retries(): the call logs through its own logger, and the
    default one stands aside for it - each retry was logged twice (the
    HTTP guide's example did so); a hook of another kind leaves it be."""
    from backoff_iter.instrument import log_retries

    caplog.set_level(logging.DEBUG)
    with pytest.raises(OSError):
        run(
            [0.5], Operation([OSError("down")] * 2), FakeTime(), name="fetch", observe=log_retries()
        )
    assert records(caplog) == [
        ("WARNING", "fetch: attempt 1 failed (OSError: down); retrying in 0.50 s"),
        ("ERROR", "fetch: attempt 2 failed (OSError: down); giving up (exhausted)"),
    ]


@each_driver
def test_a_retry_logger_enabled_for_the_process_takes_the_default_logs_place(run, caplog):
    """enable(log_retries(my_logger)): each retry is logged once, on my_logger - the
    default log stood beside it and logged each retry a second time - and a hook of
    another kind enabled leaves the default be; reset() brings the default back."""
    from backoff_iter.instrument import RetryLogger, log_retries

    caplog.set_level(logging.DEBUG)
    default = instrument.enabled()
    mine = log_retries(logging.getLogger("myapp"))
    try:
        instrument.enable(lambda event: None)
        assert default[0] in instrument.enabled()  # another kind: beside the default
        instrument.enable(mine)
        with pytest.raises(OSError):
            run([0.5], Operation([OSError("down")] * 2), FakeTime(), name="fetch")
        logged = [(r.name, r.levelname) for r in caplog.records if r.name != "asyncio"]
        assert logged == [
            ("myapp", "WARNING"),
            ("myapp", "ERROR"),
        ]
        assert [h for h in instrument.enabled() if isinstance(h, RetryLogger)] == [mine]
    finally:
        instrument.reset()
    [again] = instrument.enabled()  # a default log again, a new one
    assert isinstance(again, RetryLogger) and again is not mine


def test_logging_levels_silence_it_and_disable_removes_it(caplog):
    """setLevel(ERROR) on the backoff_iter logger silences it; disable() removes the hook; reset() brings it back."""
    time = FakeTime()
    logger = logging.getLogger("backoff_iter")
    caplog.set_level(logging.DEBUG)
    logger.setLevel(logging.ERROR)
    try:
        with pytest.raises(OSError):
            RUNNERS[0]([0.0], Operation([OSError()] * 2), time)
    finally:
        logger.setLevel(logging.NOTSET)
    assert records(caplog) == []
    instrument.disable()
    try:
        with pytest.raises(OSError):
            RUNNERS[0]([0.0], Operation([OSError()] * 2), time)
        assert records(caplog) == [] and instrument.enabled() == ()
    finally:
        instrument.reset()
    with pytest.raises(OSError):
        RUNNERS[0]([0.0], Operation([OSError()] * 2), time)
    assert len(records(caplog)) == 2


def test_no_sleep_keeps_the_default_log_quiet(caplog):
    """Under testing.no_sleep() the default hook logs nothing; a hook you asked for still does."""
    caplog.set_level(logging.DEBUG)
    seen = []
    with no_sleep():
        with pytest.raises(OSError):
            retry([1.0], observe=seen.append)(Operation([OSError()] * 2))()
    assert records(caplog) == [] and [e.kind for e in seen] == ["retry", "give_up"]


def test_a_call_that_succeeds_at_once_never_calls_the_default_hook(monkeypatch):
    """The default log costs a call that succeeds at once nothing: no event is made."""
    made = []
    monkeypatch.setattr(instrument, "event", lambda *fields: made.append(fields))
    assert retry([1.0])(lambda: "ok")() == "ok"
    for attempt in retrying([1.0]):
        with attempt:
            pass
    assert made == []


# -- 4. a schedule with no end is warned about ------------------------------------------------------


def endless(retries, delay=0.0, **options):
    """A policy of *retries* retries of *delay* whose calls always fail, run once with no sleep
    (*delay* an int: a list of it, as given, not a strategy's float)."""
    delays = (
        [delay] * retries if isinstance(delay, int) else lambda: islice(constant(delay), retries)
    )
    policy = retry(delays, sleep=lambda s: None, **options)
    with pytest.raises(OSError):
        policy(Operation([OSError()] * (retries + 1)))()


@pytest.mark.usefixtures("no_process_hooks")
def test_past_a_hundred_retries_a_policy_warns_once_how_to_bound_it():
    """The 101st retry warns (RuntimeWarning naming the policy, islice, within, deadline=); the 100th does not."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        endless(100, name="quiet")
        assert caught == []
        endless(101, name="fetch")
    [warning] = caught
    assert warning.category is RuntimeWarning
    for word in ("'fetch'", "101 retries", "islice", "within", "deadline="):
        assert word in str(warning.message)


@pytest.mark.usefixtures("no_process_hooks")
def test_the_endless_warning_names_the_users_line_in_every_form():
    """The warning points at the user's code - the loop's ``with attempt:`` (on 3.9 the
    line that raised in it), the call of the decorated function, the ``async with`` -
    not at the library's frames."""

    def long_delays():
        return constant(3601.0)

    def loop():
        for attempt in retrying(long_delays, sleep=lambda s: None, on=OSError):
            with attempt:  # the loop
                if attempt.number == 1:
                    raise OSError  # the loop

    async def no_sleep(seconds):
        pass

    async def async_loop():
        async for attempt in aretrying(long_delays, sleep=no_sleep, on=OSError):
            async with attempt:  # the async loop
                if attempt.number == 1:
                    raise OSError  # the async loop

    decorated = retry(long_delays, sleep=lambda s: None, on=OSError)(Operation([OSError()]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loop()
        decorated()  # the decorated call
        asyncio.run(async_loop())
    source = Path(__file__).read_text().splitlines()
    assert [w.filename for w in caught] == [__file__] * 3, [w.filename for w in caught]
    said = [source[w.lineno - 1].split("#")[-1].strip() for w in caught]
    assert said == ["the loop", "the decorated call", "the async loop"]


@pytest.mark.usefixtures("no_process_hooks")
def test_a_delay_past_an_hour_warns_and_an_hour_does_not():
    """One delay of 3600.5 s with no deadline warns; 3600 s does not (nor the integer 3600,
    which takes the checked path); a deadline silences it."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        endless(1, 3600.0)
        endless(1, 3600)
        endless(1, 3600.5, deadline=1e9)
        assert caught == []
        endless(1, 3600.5)
        endless(1, 3601)
    assert len(caught) == 2
    assert "a delay of 3600.5 s" in str(caught[0].message)
    assert "a delay of 3601 s" in str(caught[1].message)


@pytest.mark.usefixtures("no_process_hooks")
def test_a_policy_warns_only_once():
    """Two endless calls of one policy: one warning."""
    decorated = retry(lambda: islice(constant(0.0), 150), sleep=lambda s: None)(
        Operation([OSError()] * 400)
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            with pytest.raises(OSError):
                decorated()
    assert len(caught) == 1
