"""The local half of a fleet part: what a process counts between exchanges,
what it last heard from the fleet, and when that is too old to go by.

A fleet part (a budget, breaker or throttle given ``store=``) is its
in-process class with :class:`Member` mixed in.  Its transport - a
:class:`~backoff_iter.fleet.RedisStore`'s thread, or ``_SharedState``
inline in simulations - asks it for what to send (``_snapshot``), runs the
exchange, and hands it the answer (``_merge``).  Decisions never wait on
that: they read what the last answer left.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from ._store import Store

_INF = math.inf


class Timing:
    """The intervals a fleet part keeps, all derived from the sync interval."""

    __slots__ = ("interval", "stale", "horizon", "silence", "ttl", "arguments")

    def __init__(self, interval: float, window: float) -> None:
        self.interval = interval
        # An answer is gone by for this long after the exchange that brought
        # it; exchanges failing for this long mean Redis is away.
        self.stale = max(3.0 * interval, 0.25)
        # The script forgets a member not heard from for this long (and takes
        # its lease back): well after the member itself stopped using it.
        self.horizon = 4.0 * self.stale
        # A process with no calls for this long stops exchanging; the keys
        # outlive the last exchange by this, or three windows.
        self.silence = max(60.0 * interval, self.horizon)
        self.ttl = max(3.0 * window, self.silence)
        # ARGV 3-6 of the scripts.
        self.arguments = (
            round(interval * 1e6),
            round(self.stale * 1e6),
            round(self.horizon * 1e6),
            math.ceil(self.ttl * 1000),
        )


def state(*classes: type) -> tuple[str, ...]:
    """The slots of a fleet class: the private attributes its mixins annotate
    (declared once, there; the upper-case ones are the class's own)."""
    return tuple(
        name
        for kind in classes
        for name in vars(kind).get("__annotations__", {})
        if name.startswith("_")
    )


class Member:
    """What every fleet part keeps of the fleet, and the steps of an exchange.

    A subclass says what it sends (``_outgoing``) and what it makes of the
    answer (``_take``); this class keeps the timing: when the last answer
    came (``_ok_at``: when its exchange was sent), whether an exchange is
    under way (``_trying``: since when), and whether the process has had
    calls lately (``_idle``), so that an idle one stops exchanging after
    ``silence`` seconds and the fleet forgets it.
    """

    if not TYPE_CHECKING:  # the fleet classes hold these in their __slots__ (see state())
        __slots__ = ()

    #: The part's name in its Redis keys, and which script serves it.
    KIND: ClassVar[str]
    SCRIPT: ClassVar[str]

    _store: Store
    _signal: threading.Event | None  # wakes the store's thread (None inline)
    _member: str
    _parameters: tuple[Any, ...]  # the script's last ARGV: the part's own
    _timing: Timing
    _stale: float  # _timing.stale, read on every decision
    _ok_at: float
    _trying: float | None
    _alone: (
        bool  # exchanges have failed since the last answer lapsed: the part goes by its own counts
    )
    _active_at: float
    _due: float
    _answers: int  # answers merged: what a test counts in exchanges

    def _join(self, store: Store, parameters: tuple[Any, ...], window: float) -> None:
        """Start as a process that has not heard from the fleet yet."""
        self._store = store
        self._parameters = parameters
        self._ok_at = self._due = -_INF
        self._trying = None
        self._alone = False
        self._signal = None
        self._answers = 0
        store._attach(self, window)

    def _lapse(self, now: float) -> None:
        """Has the last answer lapsed?  The store's thread asks between its
        exchanges and after one failed, so that no decision reads a clock.

        An answer holds for ``stale`` seconds after the exchange that
        brought it.  Lapsed with an exchange under way (failing or hanging),
        or ``stale`` seconds after a first exchange began that never came
        back, the part is alone: it goes by its own counts (``_go_alone``).
        Lapsed with none under way (the process was idle), it waits for its
        next answer (``_wait``)."""
        with self._lock:
            if now - self._ok_at < self._stale or self._alone:
                return
            trying = self._trying
            if trying is None:
                self._wait()
            elif self._ok_at != -_INF or now - trying >= self._stale:
                self._alone = True
                self._go_alone(self._ok_at != -_INF)

    def _lapses_at(self) -> float:
        """When :meth:`_lapse` will find the part alone, an exchange being
        under way: ``stale`` seconds after the last answer's exchange, or
        after the first exchange if none came back; inf if none is under way."""
        with self._lock:
            since = self._ok_at if self._ok_at != -_INF else self._trying
            return _INF if since is None else since + self._stale

    def _snapshot(self, now: float, always: bool, in_flight: bool = True) -> list[Any] | None:
        """What to send (the script's ARGV from 8 on); None when the process
        has had no calls for long enough to let the fleet forget it (unless
        *always*).  *in_flight*: decisions go on while the exchange travels
        (a thread's); inline, nothing happens meanwhile."""
        with self._lock:
            self._fold()
            if not self._idle():
                self._active_at = now
            elif not always and now - self._active_at >= self._timing.silence:
                self._silent()
                return None
            if self._trying is None:
                self._trying = now
            return self._outgoing(now, in_flight and now - self._ok_at < self._stale)

    def _merge(self, sent: list[Any], answer: list[int], sent_at: float) -> None:
        """The fleet's *answer* to the counts *sent* at *sent_at*."""
        with self._lock:
            self._ok_at = sent_at
            self._trying = None
            self._alone = False
            self._answers += 1
            self._take(sent, answer, sent_at)

    def _end(self) -> None:
        """Its store closed, no answer comes again: the part goes on alone
        for good, as when Redis is gone (a part that never heard is the
        in-process one)."""
        with self._lock:
            self._alone = True
            self._go_alone(self._ok_at != -_INF)  # as it was, if alone already

    def _renew(self, member: str) -> None:
        """A new process (after fork): nothing sent, nothing heard."""
        self._lock = threading.Lock()
        self._member = member
        self._trying = None
        self._ok_at = -_INF
        self._alone = False

    def _describe(self, base: str) -> str:
        return f"{base} shared through {self._store!r}"

    # -- what each part says ------------------------------------------------------

    def _fold(self) -> None:
        """Take in what was counted without the lock (lock held)."""

    def _idle(self) -> bool:
        """Nothing counted that the fleet has not heard (lock held)."""
        return True

    def _silent(self) -> None:
        """The process had no calls for ``silence`` seconds (lock held): its
        thread exchanges no more until it has some, and the fleet forgets it."""

    def _wait(self) -> None:
        """The last answer lapsed while the process was idle: until the next
        one, go by what the process counted itself (lock held)."""

    def _go_alone(self, heard: bool) -> None:
        """Exchanges failing: go on alone (lock held); *heard*: an answer ever came."""

    def _outgoing(self, now: float, live: bool) -> list[Any]:
        """The counts to send (lock held); *live*: the last answer still holds,
        and decisions go on by it while this exchange travels."""
        raise NotImplementedError

    def _take(self, sent: list[Any], answer: list[int], sent_at: float) -> None:
        """Take in the answer (lock held)."""
        raise NotImplementedError

    def _holding(self) -> bool:
        """Whether the fleet holds room this process wanted (a budget's lease)."""
        return False

    def _pending(self) -> bool:
        """Whether this process's thread would exchange now: counts unsent, or room held."""
        with self._lock:
            self._fold()
            return not self._idle() or self._holding()


class Inline:
    """A fleet part exchanging inline, through a ``_SharedState``: before a
    decision and after an event, when ``sync_interval`` seconds of the
    store's clock have passed since its last exchange."""

    if not TYPE_CHECKING:
        __slots__ = ()

    def _tick(self: Any) -> None:
        store = self._store
        now = store._time()
        if now >= self._due:
            store._exchange(self, now)


def inline(cls: type, before: tuple[str, ...], after: tuple[str, ...]) -> type:
    """*cls* exchanging inline: its methods *before* exchange first, *after* last."""

    def ticked_before(method: Callable[..., Any]) -> Callable[..., Any]:
        def ticked(self: Any, *arguments: Any, **keywords: Any) -> Any:
            self._tick()
            return method(self, *arguments, **keywords)

        return ticked

    def ticked_after(method: Callable[..., Any]) -> Callable[..., Any]:
        def ticked(self: Any, *arguments: Any, **keywords: Any) -> Any:
            answer = method(self, *arguments, **keywords)
            self._tick()
            return answer

        return ticked

    namespace: dict[str, Any] = {
        "__slots__": (),
        "__doc__": cls.__doc__,
        "__module__": cls.__module__,
        "__qualname__": cls.__qualname__,
    }
    for name in before:
        namespace[name] = ticked_before(namespace.get(name) or getattr(cls, name))
    for name in after:
        namespace[name] = ticked_after(namespace.get(name) or getattr(cls, name))
    return type(cls.__name__, (Inline, cls), namespace)
