"""A ready-made ``before_sleep`` hook for the standard :mod:`logging` module."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import _checks

if TYPE_CHECKING:
    import logging

    from .drivers import Attempt

# logging's levels, so that importing this package does not import logging.
WARNING, ERROR = 30, 40

__all__ = ["RetryLogger", "log_retries"]


def _describe(outcome: Any) -> tuple[str, str]:
    """(type name, message) of an exception, or of a retried result."""
    if isinstance(outcome, BaseException):
        return type(outcome).__name__, str(outcome)
    return "result", repr(outcome)


class RetryLogger:
    """Logs one line per retry and one when the driver gives up.

    Pass it as ``before_sleep``; see :func:`log_retries`.  Each record
    carries the same fields in ``extra=`` for structured handlers:
    ``retry_name``, ``retry_attempt``, ``retry_delay`` (None when giving
    up), ``retry_error`` (the exception's type name, or ``"result"``) and
    ``retry_message``.
    """

    __slots__ = ("logger", "name", "level", "give_up_level")

    logger: logging.Logger | logging.LoggerAdapter[Any]
    """Where the records go."""
    name: str
    """What is retried, as the records name it."""
    level: int
    """The level of the record before each retry."""
    give_up_level: int
    """The level of the record when the driver gives up."""

    def __init__(
        self,
        logger: logging.Logger | logging.LoggerAdapter[Any] | None = None,
        *,
        name: str = "call",
        level: int = WARNING,
        give_up_level: int = ERROR,
    ) -> None:
        if logger is None:
            import logging

            logger = logging.getLogger("backoff_iter")
        if not callable(getattr(logger, "log", None)):
            raise _checks.ArgumentTypeError(
                "logger", f"logger must be a logging.Logger, got {logger!r}"
            )
        if not isinstance(name, str):
            raise _checks.ArgumentTypeError("name", f"name must be a string, got {name!r}")
        _checks.count("level", level)
        _checks.count("give_up_level", give_up_level)
        self.logger = logger
        self.name = name
        self.level = level
        self.give_up_level = give_up_level

    def __call__(self, attempt: Attempt, outcome: Any, delay: float) -> None:
        """Before a sleep: "<name>: attempt 2 failed (OSError: reset); retrying in 0.40 s"."""
        kind, message = _describe(outcome)
        self.logger.log(
            self.level,
            "%s: attempt %d failed (%s: %s); retrying in %.2f s",
            self.name,
            attempt.number,
            kind,
            message,
            delay,
            extra=self._extra(attempt, kind, message, delay),
        )

    def give_up(self, attempt: Attempt, outcome: Any) -> None:
        """When the driver gives up: "<name>: attempt 5 failed (OSError: reset); giving up"."""
        kind, message = _describe(outcome)
        self.logger.log(
            self.give_up_level,
            "%s: attempt %d failed (%s: %s); giving up",
            self.name,
            attempt.number,
            kind,
            message,
            extra=self._extra(attempt, kind, message, None),
        )

    def _extra(
        self, attempt: Attempt, kind: str, message: str, delay: float | None
    ) -> dict[str, Any]:
        return {
            "retry_name": self.name,
            "retry_attempt": attempt.number,
            "retry_delay": delay,
            "retry_error": kind,
            "retry_message": message,
        }


def log_retries(
    logger: logging.Logger | logging.LoggerAdapter[Any] | None = None,
    *,
    name: str = "call",
    level: int = WARNING,
    give_up_level: int = ERROR,
) -> RetryLogger:
    """A ``before_sleep`` hook that logs each retry, and the give-up, to *logger*.

    *logger* defaults to ``logging.getLogger("backoff_iter")``; *name* says
    what is being retried.  Retries log at *level*, giving up at
    *give_up_level*.

    >>> import logging, sys
    >>> from backoff_iter import retry
    >>> logger = logging.getLogger("example")
    >>> handler = logging.StreamHandler(sys.stdout)
    >>> logger.addHandler(handler)
    >>> @retry([0.25, 0.5], before_sleep=log_retries(logger, name="fetch"),
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
        fetch: attempt 3 failed (ConnectionError: reset by peer); giving up
    """
    return RetryLogger(logger, name=name, level=level, give_up_level=give_up_level)
