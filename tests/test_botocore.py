"""botocore's standard mode, compared call by call: RetryQuota against botocore's own
RetryQuotaChecker, and a real botocore client on botocore_retries against the same client
on botocore's own handler, both talking to a local server on 127.0.0.1."""

from __future__ import annotations

import random
from random import Random
from unittest import mock

import botocore
import botocore.exceptions
import pytest
from aws_server import AwsServer, dynamodb
from botocore.retries import quota as botocore_quota
from botocore.retries import standard
from checks import rejects

from backoff_iter import RetryQuota, exponential, per_failure, retrying
from backoff_iter.interop import botocore_retries

# botocore 1.44 ("retry behavior 2.1") is the version botocore_retries' defaults follow;
# Python 3.9 stops at 1.42, whose standard mode the documented options give.
RETRY_BEHAVIOR_2_1 = tuple(int(part) for part in botocore.__version__.split(".")[:2]) >= (1, 44)


def quota_of_this_botocore():
    """A RetryQuota that is the installed botocore's, and botocore's checker for it."""
    if RETRY_BEHAVIOR_2_1:
        return RetryQuota()
    return RetryQuota(retry_cost=5, throttle_cost=5, timeout_cost=10)


def standard_mode_of_this_botocore():
    """The options that make botocore_retries the installed botocore's standard mode."""
    if RETRY_BEHAVIOR_2_1:
        return {}
    return {
        "delays": per_failure(default=lambda: exponential(1, cap=20), jitter="full"),
        "budget": quota_of_this_botocore(),
        "retry_after": None,
    }


KINDS = ["throttle", "transient", "timeout", "ok", "bad"]


class Throttled(Exception):
    """A throttling error."""


class Invalid(Exception):
    """An error botocore does not retry."""


def botocore_call(checker, quota, script, max_attempts):
    """What botocore's standard mode does with one call's attempts: (attempts, outcome, available)."""

    class Context:
        def __init__(self, number, request_context, kind):
            self.attempt_number, self.request_context = number, request_context
            self.metadata = {}
            timeout = botocore.exceptions.ReadTimeoutError(endpoint_url="http://127.0.0.1")
            self.caught_exception = timeout if kind == "timeout" else None  # (before 1.44)

        def add_retry_metadata(self, **kwargs):
            self.metadata.update(kwargs)

    class Response:
        def __init__(self, status):
            self.status_code = status

    request_context = {}
    for number, kind in enumerate(script, 1):
        if kind == "ok":
            checker.release_retry_quota(request_context, http_response=Response(200))
            return number, "ok", quota.available_capacity
        checker.release_retry_quota(request_context, http_response=Response(500))
        if kind == "bad" or number >= max_attempts:
            return number, kind, quota.available_capacity
        checker.detector.throttle = kind == "throttle"
        if not checker.acquire_retry_quota(Context(number, request_context, kind)):
            return number, kind, quota.available_capacity
    raise AssertionError("the script ends with ok")


def our_call(quota, script, max_attempts):
    """The same call through retrying() with a RetryQuota: (attempts, outcome, available)."""
    failures = {"throttle": Throttled, "transient": ConnectionError, "timeout": TimeoutError}
    attempts = 0
    try:
        for attempt in retrying(
            [0.0] * (max_attempts - 1),
            on=(Throttled, ConnectionError, TimeoutError),
            throttled=lambda error: isinstance(error, Throttled),
            budget=quota,
            sleep=lambda seconds: None,
        ):
            with attempt:
                attempts += 1
                kind = script[attempts - 1]
                if kind == "bad":
                    raise Invalid(kind)
                if kind != "ok":
                    raise failures[kind](kind)
        return attempts, "ok", quota.available
    except (Throttled, ConnectionError, TimeoutError, Invalid) as error:
        return attempts, str(error), quota.available


@pytest.mark.long_run
@pytest.mark.usefixtures("no_process_hooks")
def test_retry_quota_decides_as_botocores_quota_checker_over_ten_thousand_sequences():
    """10,000 seeded calls of throttles, transients, timeouts and successes, 100 to a quota:
    the same attempts, outcomes and capacity as botocore's RetryQuotaChecker after every call."""

    class Detector:
        throttle = False

        def is_throttling_error_from_context(self, context):
            return self.throttle

    differences = []
    for block in range(100):
        theirs = botocore_quota.RetryQuota()
        detector = Detector()
        if RETRY_BEHAVIOR_2_1:
            checker = standard.RetryQuotaChecker(theirs, detector)
        else:  # a throttle costs what any retry does
            checker = standard.RetryQuotaChecker(theirs)
        checker.detector = detector
        ours = quota_of_this_botocore()
        rng = Random(block)
        for number in range(100):
            max_attempts = rng.choice([2, 3, 4, 5])
            weights = [rng.random() for _ in KINDS]  # each block leans its own way
            script = [*rng.choices(KINDS, weights, k=max_attempts), "ok"]
            expected = botocore_call(checker, theirs, script, max_attempts)
            got = our_call(ours, script, max_attempts)
            if got != expected:
                differences.append((block, number, script, expected, got))
    assert not differences, differences[:5]


@pytest.fixture(scope="module")
def server():
    with AwsServer() as running:
        yield running


ANSWERS = ["ok", "500", "503", "throttle", "provisioned", "slow down", "429", "bad", "hint", "crc"]


def run_calls(client, server, seed, calls=4):
    """Seeded scripts of answers for *calls* API calls: what each call ended with, and
    every request the server saw."""
    outcomes, requests = [], []
    random.seed(seed)  # the backoff's jitter draws from the module's random, as botocore's
    rng = Random(seed)
    for _ in range(calls):
        server.script = rng.choices(ANSWERS, k=6)
        server.seen.clear()
        try:
            response = client.list_tables()
            outcomes.append(("ok", response["ResponseMetadata"].get("RetryAttempts")))
        except botocore.exceptions.ClientError as error:
            metadata = error.response["ResponseMetadata"]
            outcomes.append(
                (
                    error.response["Error"]["Code"],
                    metadata.get("RetryAttempts"),
                    metadata.get("MaxAttemptsReached"),
                    metadata.get("RetryQuotaReached"),
                )
            )
        requests.append(list(server.seen))
    return outcomes, requests


@pytest.mark.long_run
@pytest.mark.usefixtures("no_process_hooks")
@pytest.mark.parametrize("max_attempts", [3, 4])
def test_botocore_retries_is_botocores_standard_mode_request_for_request(server, max_attempts):
    """A real DynamoDB client, 400 seeded scripts of 500s, 503s, throttles, 429s and x-amz-retry-after:
    the same requests, sleeps and outcomes on botocore_retries as on botocore's own handler."""
    theirs, ours = dynamodb(server.url, max_attempts), dynamodb(server.url, max_attempts)
    slept_ours = []
    botocore_retries(
        ours, max_attempts=max_attempts, sleep=slept_ours.append, **standard_mode_of_this_botocore()
    )
    differences = []
    slept_theirs: list[float] = []
    for seed in range(200):
        slept_theirs.clear()
        with mock.patch.object(
            botocore.endpoint.time, "sleep", lambda s: slept_theirs.append(s) if s else None
        ):
            expected = run_calls(theirs, server, seed)
            slept_ours.clear()
            got = run_calls(ours, server, seed)
        if (got, slept_ours) != (expected, slept_theirs):
            differences.append((seed, expected, list(slept_theirs), got, list(slept_ours)))
    assert not differences, "\n".join(map(repr, differences[:1]))


@pytest.mark.usefixtures("no_process_hooks")
@pytest.mark.parametrize(
    "script", [["slow down", "ok"], ["hint", "slow down", "ok"], ["hint", "hint", "hint"]]
)
def test_answers_with_x_amz_retry_after_are_retried_as_botocore_does(server, script):
    """The request-for-request comparison's short sibling, run on every Python: answers
    with an x-amz-retry-after header give the same requests, sleeps and outcome on
    botocore_retries as on botocore's own handler."""

    def send(client, slept):
        server.script, server.seen[:] = list(script), []
        random.seed(5)  # the jitter draws from the module's random, as botocore's
        try:
            response = client.list_tables()
            outcome = ("ok", response["ResponseMetadata"].get("RetryAttempts"))
        except botocore.exceptions.ClientError as error:
            metadata = error.response["ResponseMetadata"]
            outcome = (error.response["Error"]["Code"], metadata.get("RetryAttempts"))
        return outcome, list(server.seen), list(slept)

    theirs, ours = dynamodb(server.url, 3), dynamodb(server.url, 3)
    slept_ours: list[float] = []
    slept_theirs: list[float] = []
    botocore_retries(
        ours, max_attempts=3, sleep=slept_ours.append, **standard_mode_of_this_botocore()
    )
    with mock.patch.object(
        botocore.endpoint.time, "sleep", lambda s: slept_theirs.append(s) if s else None
    ):
        expected = send(theirs, slept_theirs)
        got = send(ours, slept_ours)
    assert got == expected and got[2]  # it retried, and slept as botocore does


@pytest.mark.usefixtures("no_process_hooks")
@pytest.mark.parametrize(
    "script", [["crc", "crc", "ok"], ["crc", "crc", "crc"], ["crc", "500", "crc", "ok"]]
)
def test_a_dynamodb_answer_whose_checksum_fails_is_retried_as_botocore_does(server, script):
    """A 200 whose x-amz-crc32 is not its body's (a corrupted answer) is retried, as botocore's
    standard mode retries it; out of attempts, the last answer comes back, and the quota is
    given back what the last retry took, as botocore's after-call gives it."""
    slept_ours: list[float] = []

    def send(client, slept):
        server.script, server.seen[:] = list(script), []
        random.seed(5)
        with mock.patch.object(
            botocore.endpoint.time, "sleep", lambda s: slept.append(s) if s else None
        ):
            response = client.list_tables()
        return response["ResponseMetadata"]["RetryAttempts"], len(server.seen), slept

    standard_mode = standard_mode_of_this_botocore()
    theirs = send(dynamodb(server.url, 3), [])
    ours = send(
        botocore_retries(dynamodb(server.url), sleep=slept_ours.append, **standard_mode),
        slept_ours,
    )
    assert ours == theirs
    assert ours[:2] == (2, 3)
    quota = quota_of_this_botocore()
    standard_mode["budget"] = quota
    client = botocore_retries(dynamodb(server.url), sleep=lambda seconds: None, **standard_mode)
    server.script = list(script)
    client.list_tables()
    cost = quota.retry_cost  # two retries of it; the answer that came back gave one
    assert quota.available == 500 - cost


@pytest.mark.usefixtures("no_process_hooks")
def test_a_garbled_checksum_header_is_retried_as_a_failed_checksum_not_raised(server):
    """An x-amz-crc32 that is no number (botocore's own handler raises ValueError on it):
    the answer cannot be trusted, so it is retried as one whose checksum fails; out of
    retries it comes back."""
    slept = []
    client = botocore_retries(dynamodb(server.url), sleep=slept.append)
    server.script, server.seen[:] = ["garbled crc", "ok"], []
    assert client.list_tables()["ResponseMetadata"]["RetryAttempts"] == 1
    assert len(server.seen) == 2 and len(slept) == 1
    server.script, server.seen[:] = ["garbled crc"] * 3, []
    assert client.list_tables()["TableNames"] == ["t"]  # the last answer, all the same
    assert len(server.seen) == 3


def test_the_quota_of_one_client_refuses_as_botocores_when_drained(server):
    """A drained quota: RetryQuotaReached in the error's metadata, no retry sent, no sleep."""
    client = dynamodb(server.url)
    slept = []
    botocore_retries(client, budget=RetryQuota(capacity=14), sleep=slept.append)
    server.script = ["500", "500", "500", "500"]
    with pytest.raises(botocore.exceptions.ClientError) as first:
        client.list_tables()
    assert first.value.response["ResponseMetadata"]["RetryQuotaReached"] is True
    assert len(slept) == 1  # the first retry paid 14; the second found nothing left


@pytest.mark.usefixtures("no_process_hooks")
def test_budget_none_is_a_quota_of_the_clients_own(server):
    """budget=None (the default): 500 units at 14 a retry - 35 retries, then RetryQuotaReached."""
    client = botocore_retries(dynamodb(server.url), budget=None, sleep=lambda seconds: None)
    reached = []
    for _ in range(18):
        server.script = ["500"] * 3
        with pytest.raises(botocore.exceptions.ClientError) as failed:
            client.list_tables()
        metadata = failed.value.response["ResponseMetadata"]
        reached.append((metadata["RetryAttempts"], metadata.get("RetryQuotaReached")))
    assert reached == [(2, None)] * 17 + [(1, True)]


def test_botocore_retries_takes_a_schedule_and_telemetry_of_its_own(server):
    """delays= replaces the backoff (at most max_attempts - 1 of it); events name the service."""
    events, slept = [], []
    client = botocore_retries(
        dynamodb(server.url), [0.5, 1.0, 2.0], observe=events.append, sleep=slept.append
    )
    server.script = ["503", "503"]
    assert client.list_tables()["TableNames"] == ["t"]
    assert slept == [0.5, 1.0]
    assert [(e.kind, e.name) for e in events] == [
        ("retry", "dynamodb"),
        ("retry", "dynamodb"),
        ("success", "dynamodb"),
    ]


@pytest.mark.usefixtures("no_process_hooks")
def test_a_schedule_per_kind_of_failure_keeps_its_kinds_within_max_attempts(server):
    """delays=per_failure(...): a throttle sleeps the throttle's delay, a 500 the default's,
    drawn in step - and no more than max_attempts - 1 of them."""
    slept = []
    client = botocore_retries(
        dynamodb(server.url),
        per_failure(throttle=[5.0, 6.0, 7.0], default=[0.1, 0.2, 0.3]),
        max_attempts=3,
        sleep=slept.append,
    )
    server.script = ["throttle", "500"]
    assert client.list_tables()["TableNames"] == ["t"]
    assert slept == [5.0, 0.2]
    slept.clear()
    server.script = ["500", "500", "500"]
    with pytest.raises(botocore.exceptions.ClientError):
        client.list_tables()
    assert slept == [0.1, 0.2]


def test_what_botocore_decides_is_not_an_option():
    """on, on_result, throttled and parts asked before an attempt are refused, each named."""
    client = dynamodb("http://127.0.0.1:9")
    rejects(lambda: botocore_retries(client, on=OSError), TypeError, "on")
    rejects(lambda: botocore_retries(client, throttled=bool), TypeError, "throttled")
    rejects(lambda: botocore_retries(client, attempt_timeout=1.0), TypeError, "attempt_timeout")
    rejects(lambda: botocore_retries(client, breaker=object()), TypeError, "breaker")
    rejects(lambda: botocore_retries(object()), TypeError, "client")
    rejects(lambda: botocore_retries(client, max_attempts=0), ValueError, "max_attempts")


def test_an_async_sleep_or_before_sleep_is_refused_when_the_client_is_put_on_retries():
    """botocore_retries(client, sleep=<async def>): botocore's handler never awaits it;
    it was taken, to fail inside the client's API call at the first retryable error."""

    async def asleep(seconds):
        pass

    async def before_sleep(attempt, outcome, delay):
        pass

    client = dynamodb("http://127.0.0.1:9")
    rejects(lambda: botocore_retries(client, sleep=asleep), TypeError, "sleep", "asleep")
    rejects(
        lambda: botocore_retries(client, before_sleep=before_sleep),
        TypeError,
        "before_sleep",
        "before_sleep",
    )


def test_a_part_as_the_budget_is_refused_as_botocore_needs_record_success():
    """budget= a Part (which any driver takes) is refused when the client is put on retries,
    naming budget and the Part: botocore's after-call gives the budget back a recovered
    call's last retry through record_success, which a Part has not.  (It was taken, and a
    corrupted 200 out of retries raised AttributeError out of the API call.)"""
    from backoff_iter.parts import Part

    class Seats(Part):
        def allow_retry(self, outcome, kind):
            return 1.0

    client = dynamodb("http://127.0.0.1:9")
    rejects(lambda: botocore_retries(client, budget=Seats()), TypeError, "budget", "Seats")


@pytest.mark.usefixtures("no_process_hooks")
@pytest.mark.parametrize("delays", [None, [0.5] * 3], ids=["botocore's", "a list"])
def test_max_attempts_beyond_any_count_retries_as_unbounded(server, delays):
    """max_attempts of 10**30 (more than islice counts): the retries are as if unbounded,
    not a ValueError out of the API call's first failure."""
    slept = []
    client = botocore_retries(dynamodb(server.url), delays, max_attempts=10**30, sleep=slept.append)
    server.script = ["500", "500"]
    assert client.list_tables()["ResponseMetadata"]["RetryAttempts"] == 2
    assert len(slept) == 2


def sqs(url):
    """A real botocore SQS client on *url* (its ReceiveMessage is a long poll)."""
    import botocore.session
    from botocore.config import Config

    return botocore.session.get_session().create_client(
        "sqs",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"mode": "standard"}),  # (before 1.44 the default was legacy)
    )


@pytest.mark.usefixtures("no_process_hooks")
def test_a_long_poll_refused_by_the_quota_still_waits_its_backoff_as_botocores_does(server):
    """SQS ReceiveMessage with the quota drained: botocore sleeps the backoff anyway and answers; so does ours.
    (Before 1.44 botocore neither waited nor charged 14: the same comparison, other counts.)"""
    retries = 500 // (14 if RETRY_BEHAVIOR_2_1 else 5)  # what the quota pays for
    waited = 4 if RETRY_BEHAVIOR_2_1 else 0  # a backoff per refused call: 3 drains and the poll

    def drain_then_poll(client):
        random.seed(3)
        for _ in range(retries // 2 + 3):  # 2 retries a call: drained, then 3 calls refused
            server.script = ["500"] * 3
            with pytest.raises(botocore.exceptions.ClientError):
                client.receive_message(QueueUrl=f"{server.url}/q")
        server.script = ["500"]
        with pytest.raises(botocore.exceptions.ClientError) as polled:
            client.receive_message(QueueUrl=f"{server.url}/q")
        return polled.value.response["ResponseMetadata"].get("RetryQuotaReached")

    slept_theirs, slept_ours = [], []
    made = standard.RetryHandler.__init__

    def sleeping_into_the_list(handler, *args, **kwargs):  # botocore's handler binds its sleep
        made(handler, *args, **{**kwargs, "sleep": slept_theirs.append})

    if RETRY_BEHAVIOR_2_1:
        with mock.patch.object(standard.RetryHandler, "__init__", sleeping_into_the_list):
            theirs = sqs(server.url)
    else:  # (botocore's handler slept nothing of its own before 1.44)
        theirs = sqs(server.url)
    ours = botocore_retries(
        sqs(server.url), sleep=slept_ours.append, **standard_mode_of_this_botocore()
    )
    with mock.patch.object(botocore.endpoint.time, "sleep", slept_theirs.append):
        reached_theirs = drain_then_poll(theirs)
    reached_ours = drain_then_poll(ours)
    assert reached_ours is reached_theirs is True
    assert slept_ours == slept_theirs
    assert len(slept_ours) == retries + waited


@pytest.mark.usefixtures("no_process_hooks")
def test_a_refused_long_poll_sleeps_no_backoff_too_long_to_sleep(server):
    """A long poll refused by the quota waits its drawn backoff (half of 1.0 s here) but not
    one too long to sleep: half of 1e300 s is skipped, as every loop skips it (it went to
    the sleep, and time.sleep raised OverflowError)."""
    from checks import Draws

    expected = {1.0: [0.5], 1e300: []} if RETRY_BEHAVIOR_2_1 else {1.0: [], 1e300: []}
    for ceiling, waited in expected.items():
        slept, quota = [], RetryQuota(capacity=20)
        assert quota.try_retry(ConnectionError())  # 6 left: less than a retry costs
        client = botocore_retries(
            sqs(server.url),
            per_failure(default=[ceiling], jitter="full", rng=Draws(0.5)),
            budget=quota,
            sleep=slept.append,
        )
        server.script = ["500"]
        with pytest.raises(botocore.exceptions.ClientError) as polled:
            client.receive_message(QueueUrl=f"{server.url}/q")
        assert polled.value.response["ResponseMetadata"]["RetryQuotaReached"] is True
        assert slept == waited


@pytest.mark.usefixtures("no_process_hooks")
def test_a_retry_paid_for_then_dropped_is_not_given_back_again_by_the_answer_that_came_back(
    server,
):
    """A throttle retried (5), then a corrupted 200 whose retry the quota paid (14) but whose
    drawn backoff is too long to sleep: the 14 goes back as the retry never runs, and the 200
    that comes back gives back what the last retry that ran took - the throttle's 5, not the
    14 a second time (the quota gained 9 it never lent)."""
    from checks import Draws

    quota = RetryQuota()
    for _ in range(10):
        assert quota.try_retry(ConnectionError()) == 14.0  # 360 left: room below the capacity
    client = botocore_retries(
        dynamodb(server.url),
        per_failure(throttle=[0.0] * 2, default=[1e300] * 2, jitter="full", rng=Draws(0.5, 0.5)),
        budget=quota,
        max_attempts=3,
        sleep=lambda seconds: None,
    )
    server.script = ["throttle", "crc"]
    assert client.list_tables()["ResponseMetadata"]["RetryAttempts"] == 1
    assert quota.available == 360.0


@pytest.mark.usefixtures("no_process_hooks")
def test_a_retry_a_part_refuses_after_the_quota_paid_leaves_the_last_retrys_share_to_give_back(
    server,
):
    """A throttle retried (5), a 500 retried (14), then a corrupted 200 whose retry the quota
    pays (14) and a part of the user's refuses: the 14 goes back, and the 200 that comes back
    gives back what the last retry that ran took from the quota - the 500's 14, not the
    throttle's 5 from the retry before it."""
    from backoff_iter.parts import Part

    class ThirdRefused(Part):
        def __init__(self):
            self.asked = 0

        def allow_retry(self, outcome, kind):
            self.asked += 1
            return self.asked < 3

    quota = RetryQuota(capacity=100)
    client = botocore_retries(
        dynamodb(server.url),
        [0.0] * 3,
        budget=quota,
        parts=[ThirdRefused()],
        max_attempts=4,
        sleep=lambda seconds: None,
    )
    server.script = ["throttle", "500", "crc"]
    assert client.list_tables()["ResponseMetadata"]["RetryAttempts"] == 2
    assert quota.available == 100 - 5 - 14 + 14


def test_a_sync_clients_retries_in_an_event_loop_are_the_clients_own_blocking(server, monkeypatch):
    """A botocore client put on our retries, called in an ``async def``,
    blocks the event loop with all its I/O: its retries' sleeps (time.sleep,
    no sleep= given) warn of nothing, where a sync loop of the library's own
    would."""
    import asyncio
    import time
    import warnings

    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    client = botocore_retries(dynamodb(server.url), [0.5, 1.0])
    server.script = ["503"]

    async def main() -> list[str]:
        return client.list_tables()["TableNames"]

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert asyncio.run(main()) == ["t"]
    assert slept == [0.5, 0.0]  # ours, then botocore's own wait of the 0.0 our handler returns
