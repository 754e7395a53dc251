"""Retry delays as plain iterables.

Every backoff strategy is a function returning an infinite iterator of delays
in seconds; shape it with ``itertools`` and the adaptors here, then loop:

>>> from itertools import islice
>>> from backoff_iter import attempts, exponential
>>> slept = []
>>> for attempt in attempts(islice(exponential(0.1, cap=10), 4), sleep=slept.append):
...     pass  # try the operation here; break on success
>>> slept
[0.1, 0.2, 0.4, 0.8]
"""

__version__ = "0.2.0.dev0"

import typing as _typing

from ._checks import ArgumentTypeError, ArgumentValueError
from ._filters import is_timeout, is_transient
from ._options import DecoratorOptions, HedgeOptions, RetryOptions, default_delays
from .adaptors import capped, elapsed, jittered, within
from .breakers import Breaker, BrokenCircuitError, CircuitBreaker
from .budgets import Budget, RetryBudget, RetryQuota, TokenBucket
from .drivers import Attempt, ExceptionsAsDelays, aretrying, retry, retrying
from .hints import RETRY_AFTER_MAX, parse_retry_after
from .instrument.logs import RetryLogger, log_retries
from .limiters import CubicRateLimiter, RateLimiter
from .loops import attempts
from .parts import Part
from .schedules import PerFailure, per_failure
from .strategies import (
    constant,
    decorrelated,
    equal_jitter,
    exponential,
    fibonacci,
    full_jitter,
    linear,
    smooth_jitter,
)
from .throttles import AdaptiveThrottle, Throttle, ThrottledError

if _typing.TYPE_CHECKING:
    from ._streams import StreamState
    from .hedging import hedge, hedged
    from .overload import OverloadRun, simulate_overload
    from .planning import (
        Plan,
        elapsed_after,
        factor_for_ratio,
        next_sleep,
        plan,
        retries_by,
        retry_count_ratio,
    )
    from .simulation import Result, simulate

# The planning functions and the simulators are imported on first use: a
# service that only retries does not pay for them when it imports us.  So is
# hedging, which imports asyncio.
_LAZY = {
    "StreamState": "_streams",
    "hedge": "hedging",
    "hedged": "hedging",
    "OverloadRun": "overload",
    "simulate_overload": "overload",
    "simulate": "simulation",
    "Result": "simulation",
    **dict.fromkeys(
        [
            "Plan",
            "elapsed_after",
            "factor_for_ratio",
            "next_sleep",
            "plan",
            "retries_by",
            "retry_count_ratio",
        ],
        "planning",
    ),
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value  # once is enough
    return value


__all__ = [
    "RETRY_AFTER_MAX",
    "AdaptiveThrottle",
    "ArgumentTypeError",
    "ArgumentValueError",
    "Attempt",
    "Breaker",
    "BrokenCircuitError",
    "Budget",
    "CircuitBreaker",
    "CubicRateLimiter",
    "DecoratorOptions",
    "ExceptionsAsDelays",
    "HedgeOptions",
    "OverloadRun",
    "Part",
    "PerFailure",
    "Plan",
    "RateLimiter",
    "Result",
    "RetryBudget",
    "RetryLogger",
    "RetryOptions",
    "RetryQuota",
    "StreamState",
    "Throttle",
    "ThrottledError",
    "TokenBucket",
    "aretrying",
    "attempts",
    "capped",
    "constant",
    "decorrelated",
    "default_delays",
    "elapsed",
    "elapsed_after",
    "equal_jitter",
    "exponential",
    "factor_for_ratio",
    "fibonacci",
    "full_jitter",
    "hedge",
    "hedged",
    "is_timeout",
    "is_transient",
    "jittered",
    "linear",
    "log_retries",
    "next_sleep",
    "parse_retry_after",
    "per_failure",
    "plan",
    "retries_by",
    "retry",
    "retry_count_ratio",
    "retrying",
    "simulate",
    "simulate_overload",
    "smooth_jitter",
    "within",
]
