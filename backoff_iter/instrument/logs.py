"""A ready-made hook for the standard :mod:`logging` module: the one every
driver has by default, and :func:`~backoff_iter.log_retries` to make your own."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from backoff_iter import _checks, _sleeping

if TYPE_CHECKING:
    import logging
    from collections.abc import Callable, MutableMapping

    from . import RetryEvent

# logging's levels, so that importing this package does not import logging.
WARNING, ERROR = 30, 40
#: The highest level a logger is given: logging names a level it does not know
#: by its digits, which str() refuses beyond some 4,300 of them.
_MOST_LEVEL = 2**63 - 1
#: The most characters of a message a line shows (``retry_message`` keeps it whole).
_LONGEST_MESSAGE = 1000

__all__ = ["RetryLogger", "log_retries"]

#: Every control character but the tab (C0, DEL, C1, U+2028 and U+2029), and
#: the bidirectional-text controls (U+202A-202E, U+2066-2069), as its escape:
#: those that end a line (str.splitlines'), those a terminal obeys (ESC begins
#: the sequences that move the cursor up and erase a line), and those that
#: reorder what a viewer shows.  A record is one line whatever the message
#: (httpx's raise_for_status() has two), and a server's text in one can
#: neither forge a line of its own nor, on a terminal, hide the lines before it.
_CONTROLS = {
    ord(c): c.encode("unicode_escape").decode()
    for c in map(
        chr,
        (
            *range(0x20),
            *range(0x7F, 0xA0),
            0x2028,
            0x2029,
            *range(0x202A, 0x202F),
            *range(0x2066, 0x206A),
        ),
    )
    if c != "\t"
}


#: A class's own name, read past its metaclass (whose ``__name__`` may raise).
_name_of: Callable[[type], str] = type.__dict__["__name__"].__get__


def error_type(outcome: Any) -> str:
    """The error type of an outcome, as logs and metrics name it: its
    exception's class name, or ``"result"`` for a retried result.  Both
    read from its type, never asked of the object: a result whose
    ``__class__`` raises (an unbound werkzeug ``LocalProxy``, which
    ``isinstance`` asks) ends no call from a hook."""
    kind = type(outcome)
    return _name_of(kind) if issubclass(kind, BaseException) else "result"


class RetryLogger:
    """Logs one line per retry and one when the driver gives up: an ``observe=`` hook.

    See :func:`log_retries`.  A call that retried and then ends with an
    error it does not retry (a breaker's or a throttle's refusal of the next
    attempt, a failure ``on`` does not match) gets its last line too, at the
    give-up's level: "...; not retried" - or, for an attempt a part refused,
    "attempt 2 never ran (CircuitOpen: ...); refused" (``"interrupted"``
    when the sleep before it broke).  Each record carries the same fields in
    ``extra=`` for structured handlers: ``retry_name``, ``retry_attempt``,
    ``retry_delay`` (None when giving up, not retrying, or waiting: a
    hedged call's attempt failed with no hedge left), ``retry_error`` (the exception's
    type name, or ``"result"``), ``retry_message`` (whole; the line shows
    its first 1,000 characters and how many more there are, its line
    breaks, other control characters and bidirectional-text
    controls escaped, ``\\n``, ``\\x1b``, ``\\u202e`` - and those of the name
    and the type name alike, which the fields keep whole: one record, one
    line, shown as written) and ``retry_reason``
    (None for a retry or an error of an attempt that ran; for a give-up
    ``"exhausted"``, ``"deadline"``, ``"budget"``, ``"retry_after"`` or
    ``"committed"``; ``"refused"`` or ``"interrupted"`` for an attempt that never ran, as
    :attr:`~backoff_iter.instrument.RetryEvent.reason` says); through a
    ``LoggerAdapter`` too, beside the adapter's own ``extra``.
    """

    __slots__ = ("_logger", "_retry_level", "_give_up_level", "quiet_in_tests")

    #: The kinds of events it logs: a call that succeeds at once costs it nothing
    #: (its wants("error") asks the drivers for the error that ends a call after a retry).
    events: frozenset[str] = frozenset({"retry", "give_up"})

    quiet_in_tests: bool
    """Log nothing while :func:`~backoff_iter.testing.no_sleep` is open (the default hook)."""

    def __init__(
        self,
        logger: logging.Logger | logging.LoggerAdapter[Any] | None = None,
        *,
        level: int = WARNING,
        give_up_level: int = ERROR,
        quiet_in_tests: bool = False,
    ) -> None:
        if logger is not None and (
            isinstance(logger, type)  # logging.Logger, meant as getLogger(...)
            or not callable(getattr(logger, "log", None))
            or not callable(getattr(logger, "isEnabledFor", None))
        ):  # (the logging module itself has log(): its first retry raised AttributeError)
            raise _checks.ArgumentTypeError(
                "logger", f"logger must be a logging.Logger, got {_checks.shown(logger)}"
            )
        self._logger = logger  # None: backoff_iter's, looked up at the first record
        self.level = level
        self.give_up_level = give_up_level
        self.quiet_in_tests = quiet_in_tests

    # The levels are checked as they are set, when made and after: a level that is
    # no whole number (a name, "DEBUG", as Logger.setLevel takes) or too large to
    # name would fail as a record is made, ending the retried call with its error.
    @property
    def level(self) -> int:
        """The level of the record before each retry."""
        return self._retry_level

    @level.setter
    def level(self, level: int) -> None:
        self._retry_level = _checks.count("level", level, most=_MOST_LEVEL)

    @property
    def give_up_level(self) -> int:
        """The level of the record when the driver gives up, or a call that
        retried ends with an error."""
        return self._give_up_level

    @give_up_level.setter
    def give_up_level(self, level: int) -> None:
        self._give_up_level = _checks.count("give_up_level", level, most=_MOST_LEVEL)

    @property
    def logger(self) -> logging.Logger | logging.LoggerAdapter[Any]:
        """Where the records go (``logging.getLogger("backoff_iter")`` unless given)."""
        if self._logger is None:
            import logging  # on the first record: `import backoff_iter` does not load logging

            self._logger = logging.getLogger("backoff_iter")
        return self._logger

    def wants(self, kind: str) -> bool:
        """Would an event of *kind* make a record now?  Only a retry, a
        give-up or an error (one that ends a call after a retry: the event
        tells), at a level the logger keeps, outside tests when quiet in them:
        the drivers make no event that nobody wants (a subclass that logs
        other events, or elsewhere, says so here too)."""
        return self._level(kind) is not None

    def _level(self, kind: str) -> int | None:
        """The level of the record an event of *kind* makes now; None: none."""
        if kind == "retry":
            level = self._retry_level
        elif kind == "give_up" or kind == "error":
            level = self._give_up_level
        else:
            return None
        if self.quiet_in_tests and _sleeping.recorders:
            return None
        return level if (self._logger or self.logger).isEnabledFor(level) else None

    def __call__(self, event: RetryEvent) -> None:
        """Log a retry ("fetch: attempt 2 failed (OSError: reset); retrying in 0.40 s",
        or below a tenth of a second "retrying in 62.5 ms"),
        a give-up ("...; giving up (exhausted)"), or an error that ends a call
        after a retry ("...; not retried"); other events are not logged, nor
        an interruption (a cancellation, ``KeyboardInterrupt``)."""
        kind = event.kind
        level = self._level(kind)
        if level is None:  # not logged, or a quiet logger: no message made for nobody
            return
        outcome = event.outcome
        ended = "failed"
        if kind == "retry":
            delay = event.delay  # None: a hedged call's, with no hedge left to send
            action = (
                "waiting for an attempt still running"
                if delay is None
                else f"retrying in {_duration(delay)}"
            )
        elif kind == "give_up":
            action = f"giving up ({event.reason})"
        elif event.number > 1 and isinstance(outcome, Exception):  # it retried, then this
            if event.reason is None:
                action = "not retried"
            else:  # the attempt never ran: a part refused it, or the sleep before it broke
                ended, action = "never ran", str(event.reason)
        else:  # an error of a call's first attempt, or an interruption: not logged
            return
        logger = self.logger
        failure = error_type(outcome)
        message = _described(outcome)
        fields = {
            "retry_name": event.name,
            "retry_attempt": event.number,
            "retry_delay": event.delay,
            "retry_error": failure,
            "retry_message": message,
            "retry_reason": event.reason,
        }
        text = (
            f"%s: attempt %d {ended} (%s: %s); %s"
            if message
            else f"%s: attempt %d {ended} (%s%s); %s"
        )
        keywords: MutableMapping[str, Any] = {"extra": fields}
        import logging  # (loaded already: a logger takes the record)

        while isinstance(logger, logging.LoggerAdapter):
            # Its log() would put its own extra= in place of the fields (unless it merges,
            # 3.13+): its process() is asked here, as log() asks it, and the fields added.
            text, keywords = logger.process(text, keywords)
            keywords["extra"] = {**(keywords.get("extra") or {}), **fields}
            logger = logger.logger
        # The line's text from outside (the message, the name - built from a URL,
        # say -, a type made at run time) with its controls escaped; none is
        # translated when none has a character isprintable() refuses.  A long
        # message (a server's page in an exception) shows its start.
        name = event.name
        if len(message) > _LONGEST_MESSAGE:
            left = len(message) - _LONGEST_MESSAGE
            message = f"{message[:_LONGEST_MESSAGE]}... ({left:,} more characters)"
        if not (message.isprintable() and name.isprintable() and failure.isprintable()):
            name, failure, message = (
                part.translate(_CONTROLS) for part in (name, failure, message)
            )
        logger.log(level, text, name, event.number, failure, message, action, **keywords)


def _duration(seconds: float) -> str:
    """A delay as a reader takes it in: seconds to two places, or below a
    tenth of one (not zero) milliseconds to three figures, where two places
    would read 0.00.

    >>> _duration(0.25), _duration(0.0), _duration(0.001), _duration(0.0625)
    ('0.25 s', '0.00 s', '1 ms', '62.5 ms')
    >>> _duration(0.09999)  # three figures would say 100 ms: a tenth of a second
    '0.10 s'
    """
    if 0.0 < seconds < 0.1:
        milliseconds = f"{seconds * 1000:.3g}"
        if milliseconds != "100":
            return f"{milliseconds} ms"
    return f"{seconds:.2f} s"


def _described(outcome: object) -> str:
    """The message of *outcome* (an exception's ``str``; a result's ``repr``,
    or ``HTTP 503`` for an HTTP response - httpx's, requests', urllib3's -
    whose repr may be an address), or a note that it has none: a failure
    whose ``__str__`` raises (it reads what its ``__init__`` never set) is
    logged, and retried, all the same."""
    try:
        if issubclass(type(outcome), BaseException):
            return str(outcome)
        status = getattr(outcome, "status_code", None)  # httpx's and requests' responses
        if status is None and hasattr(outcome, "headers"):  # urllib3's, aiohttp's
            status = getattr(outcome, "status", None)
        if isinstance(status, int) and not isinstance(status, bool):
            return f"HTTP {status}"
        return repr(outcome)
    except Exception as error:
        return (
            f"<unprintable {_name_of(type(outcome))}: its message raised {_name_of(type(error))}>"
        )


def log_retries(
    logger: logging.Logger | logging.LoggerAdapter[Any] | None = None,
    *,
    level: int = WARNING,
    give_up_level: int = ERROR,
) -> RetryLogger:
    """An ``observe=`` hook that logs each retry, and the give-up, to *logger*.

    *logger* defaults to ``logging.getLogger("backoff_iter")``; the records
    name the call by the policy's ``name``.  Retries log at *level*, giving
    up at *give_up_level*, with the reason; so does the error that ends a
    call after a retry, one the policy does not retry (``"not retried"``):
    a breaker's refusal of the next attempt, say.

    >>> import logging, sys
    >>> from backoff_iter import retry
    >>> logger = logging.getLogger("example")
    >>> handler = logging.StreamHandler(sys.stdout)
    >>> logger.addHandler(handler)
    >>> @retry([0.25, 0.5], name="fetch", observe=log_retries(logger),
    ...        sleep=lambda seconds: None)
    ... def fetch():
    ...     raise ConnectionError("reset by peer")
    >>> fetch()
    Traceback (most recent call last):
    ...
    ConnectionError: reset by peer
    >>> logger.removeHandler(handler)

    The handler printed::

        fetch: attempt 1 failed (ConnectionError: reset by peer); retrying in 0.25 s
        fetch: attempt 2 failed (ConnectionError: reset by peer); retrying in 0.50 s
        fetch: attempt 3 failed (ConnectionError: reset by peer); giving up (exhausted)
    """
    return RetryLogger(logger, level=level, give_up_level=give_up_level)
