"""Server hints: the HTTP ``Retry-After`` header, parsed without ever raising.

A header is untrusted input: whatever it holds, :func:`parse_retry_after`
returns a number of seconds or ``None``, never an exception.
"""

from __future__ import annotations

import re
import time

from . import _checks

__all__ = ["parse_retry_after"]

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
# RFC 9110 section 5.6.7: the preferred form and the two obsolete ones.
_DATE_FORMS = (
    rf"{_DAY}, (?P<day>[0-9]{{2}}) {_MONTH} (?P<year>[0-9]{{4}}) {_TIME} GMT",  # IMF-fixdate
    rf"{_LONG_DAY}, (?P<day>[0-9]{{2}})-{_MONTH}-(?P<year>[0-9]{{2}}) {_TIME} GMT",  # RFC 850
    rf"{_DAY} {_MONTH} (?P<day>[ 0-9][0-9]) {_TIME} (?P<year>[0-9]{{4}})",  # asctime
)
_dates: list[re.Pattern[str]] = []  # compiled on first use: import stays cheap


def parse_retry_after(value: str | bytes | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from an HTTP ``Retry-After`` value (RFC 9110, section 10.2.3).

    The value is delay-seconds (``"120"``) or an HTTP-date, in the preferred
    form or the obsolete RFC 850 and asctime ones, taken relative to *now*
    (seconds since the epoch; default :func:`time.time`).  A date in the
    past gives ``0.0``.  ``None``, empty, negative, fractional or otherwise
    unparseable values give ``None``; a number too large for a float gives
    ``inf`` (the drivers clamp hints to their ``retry_after_max``).

    >>> parse_retry_after("120")
    120.0
    >>> parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412400.0)
    80.0
    >>> parse_retry_after("Wednesday, 21-Oct-15 07:28:00 GMT", now=1445412400.0)
    80.0
    >>> parse_retry_after("Wed Oct 21 07:28:00 2015", now=1445412400.0)
    80.0
    >>> parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT")  # long past
    0.0
    >>> print(parse_retry_after("soon"), parse_retry_after("-5"), parse_retry_after(None))
    None None None

    Typical use, as a driver's hook::

        retry_after=lambda response: parse_retry_after(response.headers.get("Retry-After"))
    """
    if now is not None:
        now = _checks.number("now", now)
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    if not isinstance(value, str):
        return None
    text = value.strip(" \t")
    if text.isascii() and text.isdigit():
        return float(text)  # delay-seconds: never an error, inf if huge
    if len(text) > 64:  # longer than any date: not worth a regex
        return None
    if not _dates:
        _dates.extend(re.compile(form, re.IGNORECASE | re.ASCII) for form in _DATE_FORMS)
    for pattern in _dates:
        match = pattern.fullmatch(text)
        if match:
            when = _epoch(match, two_digit_year=pattern is _dates[1], now=now)
            if when is None:
                return None
            return max(0.0, when - (time.time() if now is None else now))
    return None


def _epoch(match: re.Match[str], *, two_digit_year: bool, now: float | None) -> float | None:
    """Seconds since the epoch of a matched date; None if it is no real date."""
    year = int(match["year"])
    if two_digit_year:
        # RFC 9110: a two-digit year more than 50 years in the future is
        # the most recent past year with the same last two digits.
        this_year = time.gmtime(time.time() if now is None else now).tm_year
        year += this_year - this_year % 100
        if year > this_year + 50:
            year -= 100
    import calendar  # on first use: most hints are delay-seconds

    month = _MONTHS[match["month"].lower()]
    day, hour = int(match["day"]), int(match["hour"])
    minute, second = int(match["minute"]), int(match["second"])
    if not (
        year >= 1
        and 1 <= day <= calendar.monthrange(year, month)[1]
        and hour <= 23
        and minute <= 59
        and second <= 60
    ):  # 60: a leap second
        return None
    return float(calendar.timegm((year, month, day, hour, minute, second)))
