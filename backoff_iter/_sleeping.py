"""How every loop of this library sleeps: the testing switch, the running
event loop's own sleep, and the refusal of an awaitable in a sync loop.

A delay is checked before anybody sleeps it (:func:`backoff_iter._checks.wait`):
one too long for the platform (``inf`` among them) is not slept at all; the
loops take it as "no next attempt".
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Callable
from typing import Any, cast

from . import _checks

#: The lists of :func:`backoff_iter.testing.no_sleep` blocks now open, newest
#: last.  While one is open, every loop records its delays there instead of
#: sleeping.  Module state on purpose: it reaches every thread and task.
recorders: list[list[float]] = []


def sleep(function: Callable[[float], Any] | None, delay: float) -> bool:
    """Sleep *delay* with *function* (``time.sleep`` when None, looked up now,
    so a test that patches it is obeyed), or record it under ``no_sleep``:
    True then (no time passed: a call counts it as passed, see ``Call.settle``)."""
    if recorders and _recorded(delay):
        return True
    # (None, not any falsy function: a callable that is falsy is still the sleep)
    if function is None:
        if delay > 0.0:
            _warn_if_blocking(delay)
        time.sleep(delay)
        return False
    result = function(delay)
    if result is not None:
        refuse_awaitable(result, function, "sleep")
    return False


def _warn_if_blocking(delay: float) -> None:
    """Warn that a sync loop's time.sleep of *delay* stops the event loop
    running in this thread, and every task of it: ``retrying`` (or a sync
    function under ``@retry``) in an ``async def``, where ``aretrying`` (an
    async function) was meant.  Nothing to say in a thread of its own
    (``run_in_executor``, ``to_thread``): no event loop runs there."""
    library = running_library()
    if library is not None:
        warnings.warn(
            f"a sync retry loop sleeps {delay:g} s with time.sleep, which blocks the"
            f" {library} event loop running it (every task stops): use aretrying"
            " (async for) or @retry on an async function in async code, or pass"
            " sleep= to say how to wait",
            RuntimeWarning,
            stacklevel=_checks.outside_the_library(),
        )


def _recorded(delay: float) -> bool:
    """Record *delay* in the newest open block's list; False if none is open any
    more (another thread closed the last one since the caller looked)."""
    try:
        recorders[-1].append(delay)
    except IndexError:
        return False
    return True


def refuse_awaitable(result: object, function: object, name: str = "sleep") -> None:
    """A sync loop cannot wait for what an async *name* returned: say so.

    A coroutine is closed first (an un-awaited one would warn); a Future or
    any other awaitable is left alone."""
    if _checks.unawaited(result):
        raise _checks.ArgumentTypeError(
            name,
            f"{name} must be a plain function in a sync loop, got {_checks.shown(function)},"
            " which returned an awaitable: use aretrying or an async function",
        )


def running_library() -> str | None:
    """``"asyncio"`` or ``"trio"``: the event loop running this task, as
    sniffio tells it (anyio runs on either); None outside both.

    An asyncio *task*, not merely a running asyncio loop: trio run as a
    guest of asyncio (``trio.lowlevel.start_guest_run``) runs its tasks
    inside the asyncio loop's callbacks, where no asyncio task is current."""
    asyncio = sys.modules.get("asyncio")
    if (
        asyncio is not None
        and asyncio._get_running_loop() is not None
        and asyncio.current_task() is not None
    ):
        return "asyncio"
    trio = sys.modules.get("trio")
    if trio is not None:
        try:
            trio.lowlevel.current_task()
        except RuntimeError:
            return None
        return "trio"
    return None


def default_async_sleep() -> Callable[[float], Any]:
    """The sleep of the event loop running now: ``asyncio.sleep`` or ``trio.sleep``."""
    if running_library() == "trio":
        return cast("Callable[[float], Any]", sys.modules["trio"].sleep)
    import asyncio  # already loaded by whoever runs this coroutine

    return asyncio.sleep


async def asleep(function: Callable[[float], Any] | None, delay: float) -> bool:
    """:func:`sleep` for async loops: the running event loop's sleep by default
    (asyncio's or trio's), and a plain function's result is awaited only when
    it is awaitable.  True when recorded under ``no_sleep``."""
    if recorders and _recorded(delay):
        return True
    result = (default_async_sleep() if function is None else function)(delay)
    if result is not None and hasattr(result, "__await__"):
        await result
    return False
