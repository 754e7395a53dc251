"""See retries in production: the event every driver reports, and hooks that count it.

Every driver tells its hooks one :class:`RetryEvent` per attempt: a
``"retry"`` (the attempt failed and the driver is about to sleep), a
``"give_up"`` (it failed and nothing is left to try: the delays ran out,
the deadline or the budget said no), or the end of the call: ``"success"``,
or ``"error"`` (an exception the policy does not retry).  So a call that
fails three times and then succeeds reports three retries and one success:
four attempts.

Give hooks to one policy with ``observe=`` (one hook or a list), or to
every driver of the process with :func:`enable`:

>>> from backoff_iter import retry
>>> seen = []
>>> @retry([0.5, 1.0], name="fetch", observe=seen.append, sleep=lambda s: None)
... def fetch(replies=iter([ConnectionError("reset"), "ok"])):
...     reply = next(replies)
...     if isinstance(reply, Exception):
...         raise reply
...     return reply
>>> fetch()
'ok'
>>> [(e.kind, e.name, e.number, e.delay) for e in seen]
[('retry', 'fetch', 1, 0.5), ('success', 'fetch', 2, None)]

A hook is a plain function of the event, called in the retried call's
thread or task; keep it fast and let it not raise (its error would end the
call).  With no hook at all, the drivers make no event: the success path
costs nothing more.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, Union

from . import _checks

__all__ = ["Hook", "RetryEvent", "disable", "enable"]


class RetryEvent(NamedTuple):
    """What a driver tells its hooks after each attempt; a frozen record."""

    kind: str
    """``"retry"``, ``"give_up"``, ``"success"`` or ``"error"``."""
    name: str
    """The policy's ``name``: for ``@retry`` the function's qualified name, else ``"call"``."""
    number: int
    """The attempt's number, from 1."""
    outcome: Any
    """The attempt's exception, or its result (retried or not)."""
    delay: float | None
    """For a retry, the sleep about to begin; None otherwise."""
    slept: float
    """Seconds the call has slept so far, before this delay."""
    elapsed: float
    """Seconds from the start of the call's first attempt, per the policy's clock."""
    reason: str | None
    """For a give-up, why: ``"exhausted"`` (the delays ran out), ``"deadline"`` or ``"budget"``."""
    call_id: int
    """The same for every event of one call, and different between calls of the process."""


#: A hook: a function of one :class:`RetryEvent`.
Hook = Callable[[RetryEvent], object]

#: The hooks of every driver of the process (see :func:`enable`).  The drivers
#: read this very list at each call, so it changes in place.
enabled: list[Hook] = []


def hooks(observe: Hook | Iterable[Hook] | None) -> tuple[Hook, ...]:
    """``observe=`` as a tuple of hooks, each checked to be callable."""
    if observe is None:
        return ()
    if callable(observe):
        return (observe,)
    if isinstance(observe, (str, bytes)) or not isinstance(observe, Iterable):
        raise _checks.ArgumentTypeError(
            "observe", f"observe must be a hook, a list of hooks or None, got {observe!r}"
        )
    checked = tuple(observe)
    for hook in checked:
        _checks.function("observe", hook)
    return checked


def enable(*new: Hook) -> None:
    """Give *new* hooks to every driver of the process, beside their own ``observe=``.

    Like stamina's ``set_on_retry_hooks``: one line at start-up instruments
    every retry, including those of libraries you do not control.  Calls
    already under way keep the hooks they started with.

    >>> from backoff_iter import retrying
    >>> seen = []
    >>> enable(seen.append)
    >>> for attempt in retrying([0.0], sleep=lambda s: None):
    ...     with attempt:
    ...         pass
    >>> disable()
    >>> [event.kind for event in seen]
    ['success']
    """
    checked = hooks(list(new))
    enabled.extend(checked)


def disable() -> None:
    """Remove every hook :func:`enable` gave."""
    enabled.clear()


Observe = Union[Hook, Iterable[Hook], None]
