"""How every loop of this library sleeps: one place for the checks on a
delay, the platform's longest sleep, and the testing switch.

A delay comes from the user's iterable (or a server's hint), so it is
checked here before anybody sleeps it: every real number is slept as a
float, a bool or a non-number is a TypeError, a negative or NaN delay a
ValueError.  A delay too long for the platform to sleep (``inf`` among
them) is not slept at all: the loops take it as "no next attempt".
"""

from __future__ import annotations

import _thread
import math
import time
from collections.abc import Callable
from typing import Any

from . import _checks

#: The longest delay a loop sleeps, in seconds; a longer one ends the loop.
#: Half of what the platform's timed waits accept (about 146 years on Linux,
#: 24 days on Windows): ``time.sleep`` fails on its own limit, not ours.
LONGEST = _thread.TIMEOUT_MAX / 2

#: The lists of :func:`backoff_iter.testing.no_sleep` blocks now open, newest
#: last.  While one is open, every loop records its delays there instead of
#: sleeping.  Module state on purpose: it reaches every thread and task.
recorders: list[list[float]] = []


def seconds(value: object, name: str = "delays") -> float:
    """A wait from outside (a delay, a server's hint) as a float; ``inf`` if it
    is too long to sleep.  A non-number is an ArgumentTypeError, a negative or
    NaN one an ArgumentValueError, each naming *name*."""
    if type(value) is float and 0.0 <= value <= LONGEST:
        return value
    if (not isinstance(value, (int, float)) or isinstance(value, bool)) and not _checks.is_real(
        value
    ):
        raise _checks.ArgumentTypeError(name, f"{name} must give numbers of seconds, got {value!r}")
    try:
        result = float(value)  # type: ignore[arg-type]
    except OverflowError:  # an int beyond floats: far too long to sleep, or negative
        result = math.inf if value > 0 else -math.inf  # type: ignore[operator]
    except ValueError:  # Decimal('sNaN')
        result = math.nan
    if not result >= 0.0:
        raise _checks.ArgumentValueError(
            name, f"{name} must give non-negative numbers of seconds, got {value!r}"
        )
    return result if result <= LONGEST else math.inf


def sleep(function: Callable[[float], Any] | None, delay: float) -> None:
    """Sleep *delay* with *function* (``time.sleep`` when None, looked up now,
    so a test that patches it is obeyed), or record it under ``no_sleep``."""
    if recorders:
        recorders[-1].append(delay)
        return
    result = (function or time.sleep)(delay)
    if result is not None:
        refuse_awaitable(result, function, "sleep")


def refuse_awaitable(result: object, function: object, name: str = "sleep") -> None:
    """A sync loop cannot wait for what an async *name* returned: say so.

    A coroutine is closed first (an un-awaited one would warn); a Future or
    any other awaitable is left alone."""
    if hasattr(result, "__await__"):
        close = getattr(result, "close", None)
        if callable(close):
            close()
        raise _checks.ArgumentTypeError(
            name,
            f"{name} must be a plain function in a sync loop, got {function!r},"
            " which returned an awaitable: use aretrying or an async function",
        )


async def asleep(function: Callable[[float], Any] | None, delay: float) -> None:
    """:func:`sleep` for async loops: ``asyncio.sleep`` by default, and a
    plain function's result is awaited only when it is awaitable."""
    if recorders:
        recorders[-1].append(delay)
        return
    if function is None:
        import asyncio  # already loaded by whoever runs this coroutine

        function = asyncio.sleep
    result = function(delay)
    if result is not None and hasattr(result, "__await__"):
        await result
