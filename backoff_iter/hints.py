"""Server hints: the HTTP ``Retry-After`` header, parsed without ever raising,
and the one clamp every retry path applies to a hint.

A header is untrusted input: whatever it holds, :func:`~backoff_iter.parse_retry_after`
returns a number of seconds or ``None``, never an exception.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterable

from . import _checks

__all__ = [
    "RETRY_AFTER_MAX",
    "longest_retry_after",
    "parse_retry_after",
    "server_wait",
    "sleep_for",
]

#: The longest server hint honoured by default, in seconds: 6 hours, as
#: urllib3's ``Retry.DEFAULT_RETRY_AFTER_MAX``.  A longer hint is clamped to it.
RETRY_AFTER_MAX = 6 * 3600.0


def server_wait(
    seconds: object, maximum: float = RETRY_AFTER_MAX, name: str = "retry_after"
) -> float:
    """A server's hint in seconds, clamped to *maximum*: what every retry path sleeps at least.

    Any real number is taken, and one too large for a float is clamped like
    any other long hint; a negative, NaN or non-number hint is the caller's
    bug (a hook's, say), an ``ArgumentValueError``/``ArgumentTypeError``
    naming *name*.  With an infinite *maximum*, a hint too long to sleep is
    ``inf``: :func:`sleep_for` then gives no next attempt.

    >>> server_wait(30), server_wait(10**400), server_wait(90, maximum=60.0)
    (30.0, 21600.0, 60.0)
    >>> server_wait(10**400, maximum=float("inf"))
    inf
    """
    if maximum is not RETRY_AFTER_MAX:
        maximum = _checks.seconds("maximum", maximum, infinite=True)
    return clamped(seconds, maximum, name)


def clamped(seconds: object, maximum: float, name: str) -> float:
    """:func:`server_wait` for the retry paths, whose *maximum* was checked as
    their policy was made."""
    return min(_checks.wait(name, seconds), maximum)


def sleep_for(delay: float, hint: float | None, beyond: float | None = None) -> float:
    """The sleep before the next attempt: the schedule's *delay*, raised to the
    server's *hint* (from :func:`server_wait`; None: no hint) - by at most
    *beyond* seconds when given.  ``inf`` - no next attempt, the failure
    stands - when the hint is too long to sleep.  Every retry path (the
    drivers, hedging, ``Urllib3Retry``) applies a hint here.

    >>> sleep_for(0.5, None), sleep_for(0.5, 2.0), sleep_for(3.0, 2.0)
    (0.5, 2.0, 3.0)
    >>> sleep_for(0.5, 30.0, beyond=5.0)  # the AWS SDKs' rule: at most 5 s more
    5.5
    >>> sleep_for(0.5, float("inf"), beyond=1e300)  # raised beyond any sleep: no next attempt
    inf
    >>> sleep_for(1, 1e20)  # longer than any sleep: no next attempt either
    inf

    Each argument is checked (a negative, NaN or non-number one is an
    ``ArgumentValueError``/``ArgumentTypeError`` naming it), as the retry
    paths checked theirs when their policy was made.
    """
    delay = _checks.sleepable(_checks.seconds("delay", delay, infinite=True))
    if hint is not None:
        hint = _checks.sleepable(_checks.seconds("hint", hint, infinite=True))
    if beyond is not None:
        beyond = _checks.seconds("beyond", beyond, infinite=True)
    return raised(delay, hint, beyond)


def raised(delay: float, hint: float | None, beyond: float | None) -> float:
    """:func:`sleep_for` for the retry paths, whose arguments are checked."""
    if hint is None or hint <= delay:
        return delay
    if beyond is not None and hint > delay + beyond:
        raised = delay + beyond
        return _checks.sleepable(raised)  # inf when too long to sleep
    return hint


_MONTHS = {
    name: number
    for number, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1
    )
}
_DAY = r"(?:mon|tue|wed|thu|fri|sat|sun)"
_LONG_DAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_MONTH = r"(?P<month>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)"
_TIME = r"(?P<hour>[0-9]{2}):(?P<minute>[0-9]{2}):(?P<second>[0-9]{2})"
# RFC 9110 section 5.6.7: the preferred form and the two obsolete ones; the
# preferred form also with the zone written as RFC 5322 dates write it
# ("+0000", or "UTC"), which servers send and urllib3 reads.
_ZONE = r"(?:GMT|UTC|UT|(?P<sign>[+-])(?P<zone_hours>[0-9]{2})(?P<zone_minutes>[0-9]{2}))"
_DATE_FORMS = (
    rf"{_DAY}, (?P<day>[0-9]{{2}}) {_MONTH} (?P<year>[0-9]{{4}}) {_TIME} {_ZONE}",  # IMF-fixdate
    rf"{_LONG_DAY}, (?P<day>[0-9]{{2}})-{_MONTH}-(?P<year>[0-9]{{2}}) {_TIME} GMT",  # RFC 850
    rf"{_DAY} {_MONTH} (?P<day>[ 0-9][0-9]) {_TIME} (?P<year>[0-9]{{4}})",  # asctime
)
# Compiled on first use (import stays cheap), kept whole or not at all: threads
# reading their first dates at once each compile their own, never half a list.
_dates: tuple[re.Pattern[str], ...] = ()


def longest_retry_after(values: Iterable[str | bytes] | str | bytes | None) -> float | None:
    """The longest wait among a response's ``Retry-After`` header lines
    (a proxy may repeat the header, and an HTTP client's ``headers.get``
    joins the lines with commas that no value survives); None if none
    parses.  What :class:`~backoff_iter.interop.RetryTransport` and
    :class:`~backoff_iter.interop.Urllib3Retry` read.  A single string is
    one line, and None (``get_all`` of a header not sent) is none.

    >>> longest_retry_after(["120", "120"]), longest_retry_after(["soon", "30"])
    (120.0, 30.0)
    >>> longest_retry_after("120"), longest_retry_after(None)
    (120.0, None)
    """
    if values is None or isinstance(values, (str, bytes)):
        return parse_retry_after(values)
    hints = [hint for hint in map(parse_retry_after, values) if hint is not None]
    return max(hints, default=None)


def parse_retry_after(value: str | bytes | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from an HTTP ``Retry-After`` value (RFC 9110, section 10.2.3).

    The value is delay-seconds (``"120"``) or an HTTP-date, in the preferred
    form or the obsolete RFC 850 and asctime ones (the preferred form is
    also read with its zone written ``+0000``, ``-0500`` or ``UTC``, as
    some servers send it and urllib3 reads it), taken relative to *now*
    (seconds since the epoch, any real number; default :func:`time.time`):
    with a *now* that is no time at all (``inf``, NaN) a date gives
    ``None``, and so does an RFC 850 date (its two-digit year is read
    against *now*'s) with a *now* past any calendar (``1e20``); other dates
    are measured against it as they stand.  A date in the past gives
    ``0.0``.  ``None``, empty, negative, fractional or otherwise unparseable
    values give ``None``; a number too large for a float gives ``inf`` (the
    drivers clamp hints to their ``retry_after_max``).

    >>> parse_retry_after("120")
    120.0
    >>> parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412400.0)
    80.0
    >>> parse_retry_after("Wednesday, 21-Oct-15 07:28:00 GMT", now=1445412400.0)
    80.0
    >>> parse_retry_after("Wed Oct 21 07:28:00 2015", now=1445412400.0)
    80.0
    >>> parse_retry_after("Wed, 21 Oct 2015 09:28:00 +0200", now=1445412400.0)
    80.0
    >>> parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT")  # long past
    0.0
    >>> print(parse_retry_after("soon"), parse_retry_after("-5"), parse_retry_after(None))
    None None None

    Typical use, as a driver's hook::

        retry_after=lambda response: parse_retry_after(response.headers.get("Retry-After"))
    """
    if now is not None:
        now = _moment(now)
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    if not isinstance(value, str):
        return None
    text = value.strip(" \t")
    if text.isascii() and text.isdigit():
        return float(text)  # delay-seconds: never an error, inf if huge
    if len(text) > 64:  # longer than any date: not worth a regex
        return None
    dates = _dates
    if not dates:
        dates = _compile_dates()
    for pattern in dates:
        match = pattern.fullmatch(text)
        if match:
            if now is None:
                now = time.time()
            if not math.isfinite(now):  # no clock to measure a date against
                return None
            when = _epoch(match, two_digit_year=pattern is dates[1], now=now)
            if when is None:
                return None
            return max(0.0, when - now)
    return None


def _compile_dates() -> tuple[re.Pattern[str], ...]:
    """The date forms compiled, kept for the next date: the preferred one, then
    RFC 850's (whose two-digit year is read apart), then asctime's."""
    global _dates
    dates = tuple(re.compile(form, re.IGNORECASE | re.ASCII) for form in _DATE_FORMS)
    _dates = dates
    return dates


def _moment(now: object) -> float:
    """*now* as seconds since the epoch; a real number too large for a float is inf."""
    if not _checks.is_real(now) and now.__class__ is not int:
        raise _checks.ArgumentTypeError(
            "now", f"now must be a real number, got {_checks.shown(now)}"
        )
    try:
        return float(now)  # type: ignore[arg-type]
    except OverflowError:
        return math.inf if now > 0 else -math.inf  # type: ignore[operator]
    except ValueError:  # Decimal('sNaN')
        return math.nan
    except Exception as error:  # a number of the caller's whose own __float__ broke
        raise _checks.unconvertible("now", now, error, "be a real number") from error


def _epoch(match: re.Match[str], *, two_digit_year: bool, now: float) -> float | None:
    """Seconds since the epoch of a matched date; None if it is no real date."""
    year = int(match["year"])
    if two_digit_year:
        # RFC 9110: a two-digit year more than 50 years in the future is
        # the most recent past year with the same last two digits - and one
        # no more than 50 years ahead is that year, in the next century if
        # need be (21-Oct-15 seen in 1970, or 05 in 2080: 2015, 2105).
        try:
            this_year = time.gmtime(now).tm_year
        except (OverflowError, ValueError, OSError):  # a `now` beyond the calendar
            return None
        year += this_year - this_year % 100
        if year > this_year + 50:
            year -= 100
        elif year <= this_year - 50:
            year += 100
    month = _MONTHS[match["month"].lower()]
    day, hour = int(match["day"]), int(match["hour"])
    minute, second = int(match["minute"]), int(match["second"])
    if not (
        year >= 1
        and 1 <= day <= _month_length(year, month)
        and hour <= 23
        and minute <= 59
        and second <= 60
    ):  # 60: a leap second
        return None
    days = _days_since_epoch(year, month, day)
    seconds = ((days * 24 + hour) * 60 + minute) * 60 + second
    sign = match.groupdict().get("sign")
    if sign is not None:  # local time, ahead of UTC by +hhmm (behind by -hhmm)
        zone_hours, zone_minutes = int(match["zone_hours"]), int(match["zone_minutes"])
        if zone_hours > 23 or zone_minutes > 59:
            return None
        ahead = (zone_hours * 60 + zone_minutes) * 60
        seconds += -ahead if sign == "+" else ahead
    return float(seconds)


def _month_length(year: int, month: int) -> int:
    """Days in *month* of *year*, proleptic Gregorian, for any year (no
    ``datetime``, whose years end at 9999)."""
    if month == 2:
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return 29 if leap else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _days_since_epoch(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to the date (Howard Hinnant's days_from_civil)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468
