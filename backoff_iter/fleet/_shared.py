"""A whole fleet in one process: the scripts' model, exchanged inline."""

from __future__ import annotations

import heapq
import threading
import time
from itertools import count
from typing import TYPE_CHECKING, Any

from backoff_iter import _checks, _sliding

from ._budget_script import BudgetLedger
from ._count_script import CountLedger
from ._member import Inline, Member, Timing, inline
from ._store import Store, variant

if TYPE_CHECKING:
    from backoff_iter._sliding import Clock

__all__ = ["Ledger", "_SharedState"]


class Ledger(BudgetLedger, CountLedger):
    """The whole model: every script's arithmetic on one part's keys."""

    __slots__ = ()


class _SharedState(Store):
    """The exchange scripts' arithmetic in Python (the model, ``Ledger``),
    exchanged inline: a whole fleet in one process, for simulations and tests.

    Give each simulated client its own part, all with ``store=`` the same
    ``_SharedState``: each part is one member with its own local view,
    exactly as a process with a :class:`~backoff_iter.fleet.RedisStore`.
    Its exchanges happen inline, when the part is used and
    ``sync_interval`` seconds of *clock* have passed since its last one
    (simulated time, if *clock* reads it), before a decision and after an
    event is counted; ``sync_interval=0`` exchanges at every event: a fleet
    part with no lag at all.  A member that was lent room because it wanted
    some and is not used again exchanges one interval later, handing it
    back, as its store's thread would.  So the lag is the same as a fleet's, without
    threads.  Every part on one ``_SharedState`` must be of one kind, with
    the same parameters.  *clock* is read through the one clock guard
    (:func:`backoff_iter._sliding.steady`).  Not thread-safe beyond one
    lock around each exchange.

    >>> from backoff_iter import TokenBucket
    >>> clock = [0.0]
    >>> fleet = _SharedState(sync_interval=1.0, clock=lambda: clock[0])
    >>> a, b = (TokenBucket(max_tokens=4, token_ratio=0.5, store=fleet) for _ in "ab")
    >>> a.record_failure(True), b.record_failure(True)
    (None, None)
    >>> a.try_retry(None), b.try_retry(None)  # the first alone took all the room
    (True, False)
    >>> clock[0] = 1.0; a.try_retry(None), round(a.tokens, 3)  # both failures known now
    (False, 2.0)
    """

    __slots__ = (
        "sync_interval",
        "_clock",
        "_ledger",
        "_lock",
        "_part",
        "_members",
        "_holders",
        "_turns",
        "_variants",
    )

    def __init__(self, sync_interval: float = 0.1, *, clock: Clock = time.monotonic) -> None:
        sync_interval = _checks.number("sync_interval", sync_interval)
        if not 0.0 <= sync_interval <= 3600.0:
            raise _checks.ArgumentValueError(
                "sync_interval",
                f"sync_interval must be in [0, 3600] seconds, got {_checks.shown(sync_interval)}",
            )
        _checks.callback("clock", clock, ())
        self.sync_interval = sync_interval
        self._clock = _sliding.Readings(clock)
        self._ledger = Ledger()
        self._lock = threading.Lock()
        self._part: tuple[Any, ...] | None = None  # (kind, parameters, window) it holds
        self._members = count(1)
        # Members holding a lease: (when their thread would exchange, number, member).
        self._holders: list[tuple[float, int, Member]] = []
        self._turns = count()  # orders holders due at the same time
        self._variants: dict[type, type] = {}

    def _time(self) -> float:
        """The clock, never going backwards, inf or NaN."""
        return self._clock()

    def _variant(self, cls: type, before: tuple[str, ...], after: tuple[str, ...]) -> type:
        if issubclass(cls, Inline):
            return cls
        made = self._variants.get(cls)
        if made is None:
            made = self._variants[cls] = variant(cls, inline(cls, before, after))
        return made

    def _attach(self, member: Member, window: float) -> None:
        part = (member.KIND, member._parameters, window)
        if self._part is None:
            self._part = part
        elif self._part != part:
            raise _checks.ArgumentValueError(
                "store",
                f"store {self!r} holds a {self._part[0]} with parameters {self._part[1]};"
                f" it cannot also hold a {part[0]} with {part[1]}",
            )
        member._timing = Timing(self.sync_interval, window)
        member._stale = member._timing.stale
        member._active_at = self._time()
        member._member = str(next(self._members))

    def _exchange(self, member: Member, now: float) -> None:
        """The member's exchange, after those its holders' threads would have made by *now*."""
        holders, due = self._holders, []
        while holders and holders[0][0] <= now:
            due.append(heapq.heappop(holders))
        for at, _, other in due:
            # not used since, with counts to send or room it no longer wants: its thread exchanges
            if other._due == at and other is not member and other._holding():
                self._run(other, now)
        self._run(member, now)

    def _run(self, member: Member, now: float) -> None:
        member._due = due = now + member._timing.interval
        sent: Any = member._snapshot(now, True, in_flight=False)
        with self._lock:
            answer = getattr(self._ledger, member.SCRIPT)(
                member._member,
                round(now * 1e6),
                *member._timing.arguments,
                0,
                *sent,
                *member._parameters,
            )
        member._merge(sent, answer, now)
        if member._holding():
            heapq.heappush(self._holders, (due, next(self._turns), member))

    def __repr__(self) -> str:
        return f"_SharedState(sync_interval={self.sync_interval!r})"
