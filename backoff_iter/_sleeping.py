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


#: What sleeps, and what to use in async code instead, for the warning when
#: time.sleep would stop a running event loop: the library's sync loops
#: (``retrying``, ``@retry`` on a plain function, ``attempts``) ...
RETRY_LOOP = ("retry loop", "aretrying (async for), or @retry on an async function")
#: ... and a rate limiter's ``acquire()``.
RATE_LIMITER = ("rate limiter's acquire()", "its aacquire(), or aretrying given rate_limiter=")


def sleep(
    function: Callable[[float], Any] | None, delay: float, blocking: tuple[str, str] = RETRY_LOOP
) -> bool:
    """Sleep *delay* with *function* (``time.sleep`` when None, looked up now,
    so a test that patches it is obeyed), or record it under ``no_sleep``:
    True then (no time passed: a call counts it as passed, see ``Call.settle``).
    *blocking*: what sleeps, and its async form, should time.sleep stop a
    running event loop (see :func:`_warn_if_blocking`)."""
    if recorders and _recorded(delay):
        return True
    # (None, not any falsy function: a callable that is falsy is still the sleep)
    if function is None:
        if delay > 0.0:
            _warn_if_blocking(*blocking)
        time.sleep(delay)
        return False
    result = function(delay)
    if result is not None:
        refuse_awaitable(result, function, "sleep")
    return False


def _warn_if_blocking(what: str, instead: str) -> None:
    """Warn that a sync *what* sleeping with time.sleep stops the event loop
    running in this thread, and every task of it (``retrying`` in an ``async
    def``, where ``aretrying`` was meant): once per line of the user's (the
    text names no delay, which Python's filter would take for another
    warning).  Nothing to say in a thread of its own (``run_in_executor``,
    ``to_thread``), where no event loop runs, in a notebook's cell, which
    IPython's kernel runs in a task of its event loop, nor in an HTTP
    client's retry (the first frame outside this package, which the warning
    would name, the client's own): a sync client blocks as it does all its
    I/O, and only its async twin would not."""
    library = running_library()
    if library is None or _in_a_kernel_cell(library):
        return
    level = _checks.outside_the_library()
    caller = sys._getframe(level - 1).f_globals.get("__name__")  # the frame the warning names
    if isinstance(caller, str) and caller.partition(".")[0] in _HTTP_CLIENTS:
        return  # an HTTP client's own retry (our adapter's): it blocks as all its I/O does
    warnings.warn(
        f"a sync {what} sleeps with time.sleep, which blocks the {library} event loop"
        f" running it (every task stops): in async code use {instead}; or pass sleep="
        " to say how to wait",
        RuntimeWarning,
        stacklevel=level,
    )


#: The packages whose sync clients run our adapters' retries (Urllib3Retry,
#: botocore_retries, RetryTransport): a retry there is the client's own.
_HTTP_CLIENTS = frozenset({"urllib3", "botocore", "httpx"})


def _in_a_kernel_cell(library: str) -> bool:
    """Whether the asyncio task running now is IPython's kernel's own (a
    Jupyter notebook runs each cell in it: sync code there blocks it, as
    every cell does)."""
    if library != "asyncio":
        return False
    coroutine = sys.modules["asyncio"].current_task().get_coro()
    frame = getattr(coroutine, "cr_frame", None)
    module = "" if frame is None else frame.f_globals.get("__name__", "")
    return isinstance(module, str) and module.partition(".")[0] in ("ipykernel", "IPython")


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
