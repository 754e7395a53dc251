"""Cancellation in the async loops: no retry starts once the task has been
asked to cancel since the call began - and on Python 3.11 and 3.12, a
TaskGroup's leftover count is told apart from a real request.  Under trio,
no retry starts once the task's cancel scope is cancelled."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

from ._sleeping import running_library

__all__ = ["cancellations", "no_retry_if_cancelled", "no_retry_if_cancelled_under_trio"]


_current_task: Callable[[], Any] | None = None  # asyncio.current_task, once asyncio is loaded


def cancellations() -> tuple[Any, int]:
    """The asyncio task running now and its pending cancellation requests, or
    (None, 0): outside a task, under trio, and before Python 3.11, which
    does not count them."""
    global _current_task
    current_task = _current_task
    if current_task is None:
        asyncio = sys.modules.get("asyncio")
        if asyncio is None or sys.version_info < (3, 11):
            return None, 0
        current_task = _current_task = asyncio.current_task
    try:
        task = current_task()
    except RuntimeError:  # no asyncio loop running: trio, or a coroutine driven by hand
        return None, 0
    return (None, 0) if task is None else (task, task.cancelling())


def from_cancellation(exc: BaseException | None) -> bool:
    """Does *exc* come from a cancellation: a CancelledError in its chain of
    causes and contexts, or in any exception of a group?"""
    import asyncio

    seen: set[int] = set()
    todo = [exc]
    while todo:
        error = todo.pop()
        if error is None or id(error) in seen:
            continue
        seen.add(id(error))
        if isinstance(error, asyncio.CancelledError):
            return True
        todo.append(error.__cause__)
        todo.append(error.__context__)
        members = getattr(error, "exceptions", None)
        if isinstance(members, tuple):
            todo.extend(members)
    return False


def no_retry_if_cancelled(task: Any, baseline: int, exc: BaseException | None) -> int:
    """The task's count of cancellation requests to compare with from now on;
    ``CancelledError`` (the call is over) if a request came since *baseline*.

    A TaskGroup can turn the task's own cancellation (from
    ``asyncio.timeout``, say) into an ordinary failure, or the attempt can
    catch it and return a value: retrying would run on past the timeout.
    On Python 3.11 and 3.12 a TaskGroup whose child fails after its body
    has finished leaves the count one too high for good; such a group's
    failure, with no cancellation anywhere in it, is no cancellation of the
    task: the call goes on, counting from there.
    """
    count: int = task.cancelling()
    if count <= baseline:
        return baseline
    if (
        exc is not None
        and sys.version_info < (3, 13)
        and getattr(exc, "exceptions", None) is not None
        and not from_cancellation(exc)
    ):
        return count  # the group's leftover: not a cancellation
    import asyncio

    raise asyncio.CancelledError("the task is being cancelled: no retry")


class TrioCancelling(BaseException):
    """Raised by the decision (sync) when the task's trio cancel scope is
    cancelled: the async step awaits trio's own ``Cancelled`` in its place,
    which ends the call as asyncio's ``CancelledError`` does there."""


def cancelled_under_trio() -> bool:
    """Whether this task runs under trio with its cancel scope cancelled: its
    next checkpoint raises ``Cancelled`` (trio's effective deadline is then
    minus infinity).  An attempt that failed so - its code turned the
    cancellation into an ordinary error - is no answer of the dependency:
    the call ends with the cancellation (:class:`TrioCancelling`), the parts
    told nothing, as :func:`no_retry_if_cancelled` ends it under asyncio."""
    trio = sys.modules.get("trio")
    return (
        trio is not None
        and running_library() == "trio"
        and trio.current_effective_deadline() == -math.inf
    )


async def no_retry_if_cancelled_under_trio() -> None:
    """Under trio, its ``Cancelled`` now if the task's cancel scope is cancelled.

    trio delivers a cancellation at the task's next checkpoint: an attempt
    that failed after the request, before reaching one, would be retried -
    its hooks told of a retry, or the next attempt run when the sleep is a
    plain function.  (asyncio's requests are counted: :func:`no_retry_if_cancelled`.)
    """
    trio = sys.modules.get("trio")
    if trio is not None and running_library() == "trio":
        await trio.lowlevel.checkpoint_if_cancelled()
