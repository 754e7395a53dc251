"""``botocore_retries``: a botocore (boto3) client on this library's retries
(imported from :mod:`backoff_iter.interop`).

botocore decides after each attempt, in its ``needs-retry`` event, whether
to retry and how long to sleep; its standard mode registers one handler for
it per client.  :func:`botocore_retries` replaces that handler with one that
decides on this library's core - its schedule, budget, hooks - while the
questions only botocore can answer (is this error retryable? a throttle?)
are answered by botocore's own checkers, so that with the defaults every
decision, every delay and every unit of the quota is botocore's standard
mode's.
"""

from __future__ import annotations

import contextvars
import math
import sys
from itertools import islice
from typing import TYPE_CHECKING, Any, NamedTuple

from botocore.exceptions import ClientError
from botocore.retries import standard

from . import _checks, _sleeping
from ._attempt import _NO_RESULT
from ._core import Call
from ._options import Policy, SyncPolicy
from .budgets import Budget, RetryQuota
from .parts import Part
from .schedules import END, PerFailure, per_failure
from .strategies import exponential

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from typing_extensions import Unpack

    from ._options import Delays, RetryOptions

__all__ = ["botocore_retries"]

_CALL = "backoff_iter_call"  # the request context's key of an API call's Call
_RETRY_AFTER_HEADER = "x-amz-retry-after"  # milliseconds: the AWS SDKs' own hint
_RETRY_AFTER_BEYOND = 5.0  # seconds: how far it may raise the delay, as botocore has it
_NON_THROTTLING_BASE = {"dynamodb": 0.025, "dynamodb-streams": 0.025}  # else 0.05 s


class _Verdict(NamedTuple):
    """botocore's answers about one attempt, for the policy's predicates."""

    retryable: bool
    throttle: bool
    context: Any  # botocore's RetryContext


_verdict: contextvars.ContextVar[_Verdict] = contextvars.ContextVar("backoff_iter botocore")


def _retryable(exc: BaseException) -> bool:
    return _verdict.get().retryable


def _retryable_answer(result: Any) -> bool:
    """A 2xx answer botocore retries all the same (DynamoDB's whose x-amz-crc32 fails)."""
    return _verdict.get().retryable


def _throttled(outcome: Any) -> bool:
    return _verdict.get().throttle


def _retry_after(outcome: Any) -> float | None:
    """The ``x-amz-retry-after`` header in seconds, read as botocore reads it."""
    response = _verdict.get().context.http_response
    if response is None:
        return None
    value = response.headers.get(_RETRY_AFTER_HEADER)
    if value is None:
        return None
    try:
        seconds = int(value) / 1000.0
    except (ValueError, OverflowError):
        return None
    return None if seconds < 0 else seconds


def aws_standard(service: str, retries: int) -> PerFailure:
    """The AWS SDKs' standard backoff for *service*: full jitter below
    ``min(base * 2**i, 20)`` seconds, *base* 1 s after a throttle and 50 ms
    otherwise (25 ms for DynamoDB), for *retries* retries."""
    base = _NON_THROTTLING_BASE.get(service, 0.05)
    return per_failure(
        throttle=lambda: islice(exponential(1.0, cap=20), retries),
        default=lambda: islice(exponential(base, cap=20), retries),
        jitter="full",
    )


def _within(delays: Delays, retries: int) -> Callable[[], Iterable[float]]:
    """*delays*, for at most *retries* retries (a schedule per kind of failure too)."""
    factory = _checks.reusable_delays("delays", delays)
    if isinstance(delays, PerFailure):
        return lambda: _InStepWithin(delays(), retries)
    return lambda: islice(_checks.fresh_delays("delays", factory), retries)


class _InStepWithin:
    """At most *left* delays of a :func:`~backoff_iter.per_failure` call's schedules."""

    __slots__ = ("_schedules", "_left")

    def __init__(self, schedules: Any, left: int) -> None:
        self._schedules, self._left = schedules, left

    def __iter__(self) -> _InStepWithin:
        return self

    def __next__(self) -> float:
        if self._left <= 0:
            raise StopIteration
        self._left -= 1
        delay: float = next(self._schedules)
        return delay

    def next_for(self, outcome: Any, kind: str) -> Any:
        """The next delay after *outcome*, as the core asks a per-kind schedule."""
        if self._left <= 0:
            return END
        self._left -= 1
        return self._schedules.next_for(outcome, kind)


class _Handler:
    """The client's ``needs-retry`` handler, on this library's core."""

    def __init__(self, policy: Policy, budget: Budget, service: str, max_attempts: int) -> None:
        self.policy = policy
        self.budget = budget
        self.service = service
        self.adapter = standard.RetryEventAdapter()
        self.detector = standard.ThrottlingErrorDetector(self.adapter)
        conditions = standard.StandardRetryConditions(max_attempts)  # the installed botocore's
        self.max_attempts = conditions._max_attempts_checker  # asked apart: it sets the header
        self.retryable = conditions._additional_checkers
        operations = getattr(standard.RetryHandler, "_LONG_POLLING_OPERATIONS", {})  # 1.44 on
        self.long_polling = operations.get(service, set())

    def needs_retry(self, **kwargs: Any) -> float | None:
        """The delay before the next attempt (already slept: 0), or None: no retry."""
        context = self.adapter.create_retry_context(**kwargs)
        request_context = kwargs["request_dict"]["context"]
        call: Call | None = request_context.get(_CALL)
        if call is None or context.attempt_number == 1:
            call = request_context[_CALL] = Call(self.policy, None)
        self.max_attempts.is_retryable(context)  # botocore's "max" of the request's header
        verdict = _Verdict(
            self._retryable(context),
            self.detector.is_throttling_error(**kwargs),
            context,
        )
        token = _verdict.set(verdict)
        try:
            retried = self._settle(call, context, kwargs)
        finally:
            _verdict.reset(token)
        if not retried and call.reason == "budget":
            context.add_retry_metadata(RetryQuotaReached=True)
            if context.operation_model is not None and (
                context.operation_model.name in self.long_polling
            ):  # botocore still waits out the backoff before the poll's answer goes back
                pending = call.refused
                if pending is not None:  # checked as every loop's: too long to sleep, not slept
                    delay = _checks.wait("delays", pending.draw())
                    if delay < math.inf:
                        _sleeping.sleep(self.policy.sleep, delay)
                self.adapter.adapt_retry_response_from_context(context)
                return False  # (not None: later handlers must not retry)
        self.adapter.adapt_retry_response_from_context(context)
        return 0.0 if retried else None

    def _retryable(self, context: Any) -> bool:
        """botocore's verdict: is the attempt's outcome retryable?  A DynamoDB
        answer whose x-amz-crc32 is no number (botocore's checker raises
        ValueError on it) cannot be trusted: retried, as a failed checksum."""
        try:
            return bool(self.retryable.is_retryable(context))
        except ValueError:
            return True

    def _settle(self, call: Call, context: Any, kwargs: dict[str, Any]) -> bool:
        """Decide (and sleep) on this attempt's outcome; True: botocore sends the next."""
        failure = kwargs["caught_exception"]
        if failure is None:
            response = context.http_response
            if response is not None and 200 <= response.status_code < 300:
                retried = call.settle(None, None, context.parsed_response)
                if not retried and call.reason is not None:
                    # a retried 2xx with no retry left still goes back, a success for
                    # botocore's after-call: the quota gets back what the last retry took
                    # from it (the first part asked: its share comes first)
                    spent = call.took[0] if call.took else 0.0
                    self.budget.record_success(call.number == 1, spent)
                return retried
            operation = kwargs["operation"]
            failure = ClientError(context.parsed_response or {}, operation.name)
        return call.settle(None, failure, _NO_RESULT)


def botocore_retries(
    client: Any,
    delays: Delays | None = None,
    *,
    budget: Budget | None = None,
    max_attempts: int = 3,
    **options: Unpack[RetryOptions],  # pyright: ignore[reportGeneralTypeIssues]
) -> Any:
    """Put a botocore (boto3) client on this library's retries; returns the client.

    Every API call of *client* then retries on *delays* and *budget*: its
    standard retry handler is replaced, through botocore's event system,
    by one that decides on this library's core.  With the defaults it is
    botocore's standard mode (1.44, "retry behavior 2.1") to the decision,
    the delay and the unit: the same retryable errors (transient, throttling
    and modeled ones, the same status and error codes, as botocore's own
    checkers tell them; a DynamoDB 200 whose ``x-amz-crc32`` fails, or is
    no number - on which botocore raises - is retried too, and comes back
    when no retry is left), the delays ``random() * min(base * 2**i, 20)``
    drawn from the same ``random.random()`` calls (*base* 1 s after a
    throttle, 50 ms otherwise, 25 ms for DynamoDB), ``x-amz-retry-after``
    raising a delay by at most 5 s, and a :class:`~backoff_iter.RetryQuota`
    per client, paid before the delay is drawn; long-polling operations wait
    out their backoff even when the quota refuses, as botocore's do.

    - *delays*: another schedule (a factory, a list or tuple, or
      :func:`~backoff_iter.per_failure`, whose kinds are kept); at most
      *max_attempts* - 1 of its delays are slept.
    - *budget*: a budget shared as you like -
      ``RetryQuota(store=RedisStore(...))`` gives a whole fleet one AWS
      quota; None: a :class:`~backoff_iter.RetryQuota` of this client's
      own, as botocore's.  A :class:`~backoff_iter.Budget`, not a Part:
      a retried 2xx that botocore hands back all the same gives it back
      the call's last retry through ``record_success``.
    - *max_attempts*: attempts per API call, the first included (botocore's
      ``total_max_attempts``; botocore gives DynamoDB 4 by default).
    - *options*: those of every driver (:class:`~backoff_iter.RetryOptions`),
      but the ones botocore's verdict sets (``on``, ``on_result``,
      ``throttled``) and those asked before an attempt, which botocore sends
      on its own (``rate_limiter``, ``throttle``, ``breaker``,
      ``attempt_timeout``, ``parts`` with a ``before_attempt``).  ``name``
      defaults to the service's name.

    botocore before 1.44 (the last for Python 3.9 is 1.42) retried the same
    errors less its status-only throttles, with one backoff for every
    failure, no ``x-amz-retry-after`` and its old costs; these options make
    it that, again call for call::

        botocore_retries(
            client,
            per_failure(default=lambda: exponential(1, cap=20), jitter="full"),
            budget=RetryQuota(retry_cost=5, throttle_cost=5, timeout_cost=10),
            retry_after=None,
        )

    Sleeping is the policy's (``time.sleep``, or ``sleep=``; under
    :func:`~backoff_iter.testing.no_sleep` nothing sleeps); botocore is told
    a delay of 0.
    """
    try:
        service = client.meta.service_model.service_id.hyphenize()
        events = client.meta.events
    except AttributeError:
        raise _checks.ArgumentTypeError(
            "client", f"client must be a botocore (boto3) client, got {_checks.shown(client)}"
        ) from None
    max_attempts = _checks.count("max_attempts", max_attempts, minimum=1)
    for name in ("on", "on_result", "throttled"):  # (on_result: a 2xx botocore retries)
        if name in options:
            raise _checks.ArgumentTypeError(
                name, f"botocore_retries sets {name} from botocore's own checkers; it takes none"
            )
    for name in ("rate_limiter", "throttle", "breaker", "attempt_timeout"):
        if options.get(name) is not None:
            raise _checks.ArgumentTypeError(
                name,
                f"botocore_retries takes no {name}: it would be asked before each attempt,"
                " which botocore sends on its own",
            )
    if isinstance(budget, Part):  # (any driver takes one; botocore's after-call cannot)
        raise _checks.ArgumentTypeError(
            "budget",
            "botocore_retries' budget must be a Budget, not a Part: botocore's after-call"
            " gives it back a recovered call's last retry through record_success, got"
            f" {_checks.shown(budget)}",
        )
    given: dict[str, Any] = dict(options)
    given.setdefault("name", service)
    given.setdefault("retry_after", _retry_after)
    given.setdefault("retry_after_beyond", _RETRY_AFTER_BEYOND)
    given["on"] = _retryable
    given["on_result"] = _retryable_answer
    given["throttled"] = _throttled
    given["budget"] = budget = RetryQuota() if budget is None else budget
    retries = min(max_attempts - 1, sys.maxsize)  # islice counts no further: as if unbounded
    schedule = aws_standard(service, retries) if delays is None else _within(delays, retries)
    policy = SyncPolicy(schedule, **given)  # a sync loop: its sleep is never awaited
    if policy.plan.befores:
        raise _checks.ArgumentTypeError(
            "parts",
            "botocore_retries takes no part with a before_attempt: botocore sends each"
            " attempt on its own",
        )
    handler = _Handler(policy, budget, service, max_attempts)
    if hasattr(standard, "MaxAttemptsSeeder"):  # (1.44 on: the first request's header)
        seeder = standard.MaxAttemptsSeeder(max_attempts)
        events.unregister(f"request-created.{service}", unique_id=f"seed-max-attempts-{service}")
        events.register(
            f"request-created.{service}",
            seeder.seed_max_attempts,
            unique_id=f"seed-max-attempts-{service}",
        )
    events.unregister(f"needs-retry.{service}", unique_id=f"retry-config-{service}")
    events.register(
        f"needs-retry.{service}", handler.needs_retry, unique_id=f"retry-config-{service}"
    )
    return client
