"""One call's delays for a peer that asks for them by number (tenacity,
backoff, urllib3): drawn as asked, kept, and checked like a driver's."""

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
