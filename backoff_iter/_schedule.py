"""One call's delays for a peer that asks for them by number (tenacity,
backoff, urllib3): drawn as asked, kept as long as the peer may ask again,
and checked like a driver's."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Iterator
from functools import partial

from . import _checks

Factory = Callable[[], Iterable[float]]


class Schedule:
    """One call's delays, drawn as they are asked for and kept, so the n-th
    retry always gets the n-th delay however often a peer asks.  Thread-safe."""

    __slots__ = ("_delays", "_lock")

    def __init__(self, name: str, factory: Factory) -> None:
        from more_itertools import seekable  # with the peer: no cost to `import backoff_iter`

        delays: Iterator[float] = _checks.fresh_delays(name, factory)
        # Checked as they are drawn; seekable keeps what was drawn, to be read again.
        self._delays = seekable(map(partial(_checks.wait, name), delays))
        self._lock = threading.Lock()

    def delay(self, retry: int) -> float | None:
        """The delay before retry number *retry* (from 1); None if the
        schedule has none (it ran out, or the delay is infinite)."""
        with self._lock:
            self._delays.seek(retry - 1)
            value = next(self._delays, None)
        return None if value is None or value == math.inf else value

    def __deepcopy__(self, memo: object) -> Schedule:
        """The same schedule: a copy of what holds it (``copy.deepcopy`` of a
        urllib3 ``Retry`` mid-request) is still a link of the same call."""
        return self


class Latest:
    """One call's delays for a peer that asks for retry *n* (as often as it
    likes), then for a later one, never back (tenacity, backoff): only the
    latest delay is kept, so an endless call holds one delay, not all it
    slept.  Thread-safe.

    >>> latest = Latest("delays", lambda: [0.5, 1.0, math.inf])
    >>> [latest.delay(n) for n in (1, 1, 2, 3, 4)]
    [0.5, 0.5, 1.0, None, None]
    """

    __slots__ = ("_delays", "_retry", "_delay", "_lock")

    def __init__(self, name: str, factory: Factory) -> None:
        self._delays = map(partial(_checks.wait, name), _checks.fresh_delays(name, factory))
        self._retry = 0  # the number of the latest delay drawn, kept in _delay
        self._delay: float | None = None
        self._lock = threading.Lock()

    def delay(self, retry: int) -> float | None:
        """The delay before retry number *retry* (from 1, never less than the
        number last asked); None if the schedule has none (it ran out, or the
        delay is infinite)."""
        with self._lock:
            if retry < self._retry:
                raise RuntimeError(f"retry {retry} asked after retry {self._retry}: never back")
            while self._retry < retry:
                self._delay = next(self._delays, None)
                self._retry += 1
            value = self._delay
        return None if value is None or value == math.inf else value
