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

import typing as _typing

from ._version import __version__ as __version__

if _typing.TYPE_CHECKING:
    from ._checks import ArgumentTypeError, ArgumentValueError
    from ._filters import is_timeout, is_transient
    from ._options import DecoratorOptions, HedgeOptions, RetryOptions, default_delays
    from ._streams import StreamState
    from .adaptors import capped, elapsed, jittered, within
    from .breakers import Breaker, BrokenCircuitError, CircuitBreaker
    from .budgets import Budget, RetryBudget, RetryQuota, TokenBucket
    from .drivers import Attempt, ExceptionsAsDelays, aretrying, retry, retrying
    from .hedging import hedge, hedged
    from .hints import RETRY_AFTER_MAX, parse_retry_after
    from .instrument.logs import RetryLogger, log_retries
    from .limiters import CubicRateLimiter, RateLimiter
    from .loops import attempts
    from .overload import OverloadRun, simulate_overload
    from .parts import Part
    from .planning import (
        Plan,
        elapsed_after,
        factor_for_ratio,
        next_sleep,
        plan,
        retries_by,
        retry_count_ratio,
    )
    from .schedules import PerFailure, per_failure
    from .simulation import Result, simulate
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

# Every name is imported on first use: ``import backoff_iter`` runs this file
# alone, so it costs next to nothing (and is over before a Ctrl-C at the
# command line's start could land in it); a service that only retries never
# loads the planning functions, the simulators or hedging.
_MODULES = {
    "_checks": ("ArgumentTypeError", "ArgumentValueError"),
    "_filters": ("is_timeout", "is_transient"),
    "_options": ("DecoratorOptions", "HedgeOptions", "RetryOptions", "default_delays"),
    "_streams": ("StreamState",),
    "adaptors": ("capped", "elapsed", "jittered", "within"),
    "breakers": ("Breaker", "BrokenCircuitError", "CircuitBreaker"),
    "budgets": ("Budget", "RetryBudget", "RetryQuota", "TokenBucket"),
    "drivers": ("Attempt", "ExceptionsAsDelays", "aretrying", "retry", "retrying"),
    "hedging": ("hedge", "hedged"),
    "hints": ("RETRY_AFTER_MAX", "parse_retry_after"),
    "instrument.logs": ("RetryLogger", "log_retries"),
    "limiters": ("CubicRateLimiter", "RateLimiter"),
    "loops": ("attempts",),
    "overload": ("OverloadRun", "simulate_overload"),
    "parts": ("Part",),
    "planning": (
        "Plan",
        "elapsed_after",
        "factor_for_ratio",
        "next_sleep",
        "plan",
        "retries_by",
        "retry_count_ratio",
    ),
    "schedules": ("PerFailure", "per_failure"),
    "simulation": ("Result", "simulate"),
    "strategies": (
        "constant",
        "decorrelated",
        "equal_jitter",
        "exponential",
        "fibonacci",
        "full_jitter",
        "linear",
        "smooth_jitter",
    ),
    "throttles": ("AdaptiveThrottle", "Throttle", "ThrottledError"),
}
_LAZY = {name: module for module, names in _MODULES.items() for name in names}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value  # once is enough
    return value


def __dir__() -> list[str]:
    """What ``dir(backoff_iter)`` and a REPL's completion show: every public
    name, those not imported yet included."""
    return sorted({*globals(), *_LAZY})


__all__ = [  # each name is imported on first use (__getattr__)
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
