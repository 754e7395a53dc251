"""parse_retry_after: every RFC 9110 form, and hostile header values that must never raise."""

from __future__ import annotations

import calendar
import email.utils
import math
import time

import pytest
from checks import rejects
from hypothesis import given
from hypothesis import strategies as st

from backoff_iter import parse_retry_after
from backoff_iter.hints import longest_retry_after

NOW = 1445412400.0  # Wed, 21 Oct 2015 07:26:40 GMT


@pytest.mark.parametrize(
    "value, seconds",
    [
        ("120", 120.0),
        ("0", 0.0),
        ("  7\t", 7.0),
        (b"30", 30.0),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 80.0),  # IMF-fixdate
        ("wed, 21 oct 2015 07:28:00 gmt", 80.0),  # names are case-insensitive
        ("Wednesday, 21-Oct-15 07:28:00 GMT", 80.0),  # RFC 850, two-digit year
        ("Wed Oct 21 07:28:00 2015", 80.0),  # asctime
        ("Wed Oct  1 07:28:00 2015", 0.0),  # asctime, space-padded day, in the past
        ("Tue, 20 Oct 2015 07:28:00 GMT", 0.0),  # in the past
        ("Thu, 01 Jan 1970 00:00:00 GMT", 0.0),
        ("Mon, 01 Jan 1900 00:00:00 GMT", 0.0),  # before 1970
        ("Fri, 31 Dec 9999 23:59:59 GMT", 253402300799.0 - NOW),  # year 9999
        ("Wed, 21 Oct 2015 07:26:60 GMT", 20.0),  # a leap second
        ("Mon, 01 Jan 0001 00:00:00 GMT", 0.0),  # the first year there is
        ("Thursday, 29-Feb-68 00:00:00 GMT", 0.0),  # 2068 is too far ahead: 1968, a leap year
    ],
)
def test_every_rfc_form_gives_the_seconds_to_wait(value, seconds):
    """Delay-seconds and the three HTTP-date forms, relative to now."""
    assert parse_retry_after(value, now=NOW) == seconds


@pytest.mark.parametrize(
    "value, seconds",
    [
        ("Wed, 21 Oct 2015 07:28:00 +0000", 80.0),
        ("Wed, 21 Oct 2015 07:28:00 -0000", 80.0),
        ("Wed, 21 Oct 2015 07:28:00 UTC", 80.0),
        ("Wed, 21 Oct 2015 07:28:00 ut", 80.0),
        ("Wed, 21 Oct 2015 09:58:00 +0230", 80.0),  # local time, 2.5 hours ahead of UTC
        ("Wed, 21 Oct 2015 02:28:00 -0500", 80.0),  # ... 5 hours behind
        ("Wed, 21 Oct 2015 23:59:00 +2359", 0.0),  # the widest zone: 00:00 UTC, past
        ("Thu, 22 Oct 2015 07:27:00 +2359", 80.0),
    ],
)
def test_the_preferred_form_is_read_with_a_zone_as_urllib3_reads_it(value, seconds):
    """Servers send IMF-fixdates with an RFC 5322 zone (+0000, -0500, UTC): read
    as urllib3 reads them (with the standard library's email.utils), the offset taken
    off.  They gave None: no wait at all."""
    assert parse_retry_after(value, now=NOW) == seconds
    as_urllib3_reads_it = email.utils.parsedate_to_datetime(value).timestamp()
    assert seconds == max(0.0, as_urllib3_reads_it - NOW)


def test_a_two_digit_year_more_than_50_years_ahead_is_in_the_past():
    """RFC 9110: '-70' read in 2015 is 1970, not 2070."""
    assert parse_retry_after("Thursday, 01-Jan-70 00:00:00 GMT", now=NOW) == 0.0
    in_2065 = calendar.timegm((2065, 1, 1, 0, 0, 10))  # 50 years ahead: still the future
    assert parse_retry_after("Thursday, 01-Jan-65 00:00:10 GMT", now=NOW) == in_2065 - NOW
    assert parse_retry_after("Friday, 01-Jan-66 00:00:00 GMT", now=NOW) == 0.0  # 51 ahead: 1966


def test_a_two_digit_year_no_more_than_50_years_ahead_is_ahead_in_the_next_century_too():
    """RFC 9110 moves back only a year more than 50 years ahead: '-15' read in
    1970 is 2015 and '-05' read in 2080 is 2105 (both read as a century back,
    in the past: no wait)."""
    in_2015 = calendar.timegm((2015, 10, 21, 7, 28, 0))
    assert parse_retry_after("Wednesday, 21-Oct-15 07:28:00 GMT", now=0.0) == in_2015
    in_2080 = calendar.timegm((2080, 1, 1, 0, 0, 0))
    in_2105 = calendar.timegm((2105, 1, 1, 0, 0, 0))
    assert parse_retry_after("Monday, 01-Jan-05 00:00:00 GMT", now=in_2080) == in_2105 - in_2080
    in_2130 = calendar.timegm((2130, 1, 1, 0, 0, 0))  # 50 years ahead: still ahead
    assert parse_retry_after("Tuesday, 01-Jan-30 00:00:00 GMT", now=in_2080) == in_2130 - in_2080


def test_the_default_now_is_the_current_time():
    """Without now=, a date is taken relative to time.time()."""
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert parse_retry_after("Fri, 01 Jan 9999 00:00:00 GMT") > 1e11


@pytest.mark.parametrize(
    "value",
    [
        None,
        "",
        "   ",
        "-5",
        "+5",
        "1.5",
        "5s",
        "0x10",
        "1e3",
        "١٢٠",
        "１２０",
        "²",
        "soon",
        "Wed, 21 Oct 2015 07:28:00",
        "Wed, 21 Oct 2015 07:28:00 +2400",  # no such zone
        "Wed, 21 Oct 2015 07:28:00 +0060",
        "Wed, 21 Oct 2015 07:28:00 +000",
        "Wed, 21 Oct 2015 07:28:00 EST",  # a zone's name: read as nothing, not guessed
        "Wednesday, 21-Oct-15 07:28:00 +0000",  # only the preferred form takes a zone
        "Wed, 32 Oct 2015 07:28:00 GMT",
        "Wed, 29 Feb 2015 07:28:00 GMT",
        "Wed, 21 Foo 2015 07:28:00 GMT",
        "Wed, 21 Oct 2015 24:00:00 GMT",
        "Wed, 21 Oct 2015 07:60:00 GMT",
        "Wed, 21 Oct 2015 07:28:61 GMT",
        "120\n",  # only spaces and tabs surround a value (RFC 9110's OWS)
        "\r120",
        "\x0b120",
        "X5X",
        "Wed, 21 Oct 0000 07:28:00 GMT",
        "Xyz, 21 Oct 2015 07:28:00 GMT",
        "x" * 100_000,
        "Wed, 21 Oct 2015 07:28:00 GMT" * 3,
        120,
        1.5,
        ["120"],
        b"\xff\xfe",
        "\x00",
    ],
)
def test_hostile_values_give_none_never_an_exception(value):
    """Garbage, unicode digits, impossible dates, non-strings: None."""
    assert parse_retry_after(value, now=NOW) is None


def test_a_huge_number_is_infinite_not_an_error():
    """Digits beyond any float give inf (the drivers clamp hints to retry_after_max)."""
    assert parse_retry_after("9" * 5000) == math.inf
    assert parse_retry_after("1" + "0" * 30) == 1e30


@pytest.mark.long_run
@given(st.text(max_size=80) | st.binary(max_size=80))
def test_any_text_gives_a_non_negative_number_or_none(value):
    """Whatever a server sends: None, or seconds that are not negative and not NaN."""
    result = parse_retry_after(value, now=NOW)
    assert result is None or result >= 0.0


def test_a_bad_now_is_the_callers_error():
    """now= is the caller's, not the server's: a non-number is a TypeError naming it."""
    rejects(lambda: parse_retry_after("5", now="today"), TypeError, "now", "'today'")


def test_a_now_whose_own_float_raises_is_the_callers_error():
    """now= a Fraction whose float() raises: a TypeError naming now and what broke."""
    from fractions import Fraction

    class Unreadable(Fraction):
        def __float__(self):
            raise LookupError("no float here")

    rejects(lambda: parse_retry_after("5", now=Unreadable(3)), TypeError, "now", "LookupError")


@pytest.mark.parametrize("now", [math.inf, -math.inf, math.nan])
def test_a_date_against_a_clock_that_is_no_number_gives_none(now):
    """now= inf, -inf or NaN: no moment to measure a date from, so no hint (seconds still are)."""
    for date in ("Sun, 06 Nov 1994 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"):
        assert parse_retry_after(date, now=now) is None
    assert parse_retry_after("120", now=now) == 120.0


def test_letters_and_digits_of_other_scripts_are_no_hint():
    """Arabic-Indic digits, or a long s that Unicode case-folds to "s": None, as HTTP says."""
    assert parse_retry_after("\u0661\u0662\u0660") is None
    assert parse_retry_after("Sun, \u0660\u0666 Nov 1994 08:49:37 GMT", now=NOW) is None
    assert parse_retry_after("\u017fun, 06 Nov 1994 08:49:37 GMT", now=NOW) is None


def years(first, last):
    """Seconds from 1 January of *first* to 1 January of *last*, proleptic Gregorian."""
    leap = lambda year: year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return sum(366 if leap(year) else 365 for year in range(first, last)) * 86400.0


@pytest.mark.parametrize(
    ("value", "now", "expected"),
    [
        # now is 1 January 10000: "15" is 10015 (within 50 years ahead), "51" is 9951 (past)
        ("Monday, 01-Jan-15 00:00:00 GMT", 253402300800, years(10000, 10015)),
        ("Monday, 01-Jan-51 00:00:00 GMT", 253402300800, 0.0),
        # year 33658: "00" is 33700, 42 years ahead (33600 is 58 back: RFC 9110 reads ahead)
        ("Saturday, 01-Jan-00 00:00:10 GMT", 10**12, years(1970, 33700) + 10 - 10**12),
    ],
)
def test_rfc_850_dates_past_the_year_9999_are_read_not_raised(value, now, expected):
    """A two-digit year that lands past 9999 (now beyond year 10000): a number of seconds, never ValueError."""
    assert years(1970, 10000) == 253402300800
    assert parse_retry_after(value, now=now) == expected


@given(
    st.from_regex(
        r"(Monday|Sunday), [0-3][0-9]-(Jan|Feb|Dec)-[0-9]{2} [0-2][0-9]:[0-5][0-9]:[0-6][0-9] GMT",
        fullmatch=True,
    ),
    st.one_of(st.floats(allow_nan=True), st.integers(min_value=-(10**30), max_value=10**30)),
)
def test_an_rfc_850_date_against_any_now_never_raises(value, now):
    """Whatever the clock says, parsing returns seconds or None."""
    result = parse_retry_after(value, now=now)
    assert result is None or result >= 0.0


@pytest.mark.parametrize(
    ("date", "real"),
    [
        ("Tue, 29 Feb 2000 00:00:00 GMT", True),  # divisible by 400: a leap year
        ("Mon, 29 Feb 2100 00:00:00 GMT", False),  # by 100 only: none
        ("Sun, 29 Feb 2004 00:00:00 GMT", True),
        ("Sat, 29 Feb 2003 00:00:00 GMT", False),
    ],
)
def test_the_29th_of_february_exists_in_leap_years_only(date, real):
    """A date that no calendar holds gives None; a real one its seconds (the Gregorian leap rule)."""
    result = parse_retry_after(date, now=0.0)
    assert (result is not None) is real
    if real:
        assert result == calendar.timegm(time.strptime(date, "%a, %d %b %Y %H:%M:%S GMT"))


def test_longest_retry_after_takes_what_a_header_lookup_returns():
    """A message's get_all() (http.client, urllib.request) is None without the header: no
    hint; a single value (headers.get()) is one header line, never read character by
    character (the digits of "120", or of a date, were each taken for a hint)."""
    import http.client
    import io

    absent = http.client.parse_headers(io.BytesIO(b"Content-Type: text/plain\r\n\r\n"))
    lines = http.client.parse_headers(io.BytesIO(b"Retry-After: 30\r\nRetry-After: 120\r\n\r\n"))
    assert longest_retry_after(absent.get_all("Retry-After")) is None
    assert longest_retry_after(lines.get_all("Retry-After")) == 120.0
    assert longest_retry_after(lines.get("Retry-After")) == 30.0
    assert longest_retry_after(b"120") == 120.0
    assert longest_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # long past
    assert longest_retry_after("soon") is None


def test_threads_reading_their_first_dates_at_once_each_read_every_form(monkeypatch):
    """A thread reads a date while another is still compiling the date forms on
    first use: each reads it right, and every form parses afterwards (the second
    saw a list of one pattern: a date then was unparsed, or an IndexError)."""
    import re
    import threading
    import types

    from backoff_iter import hints

    compiled = threading.Event()  # the first thread has compiled its first form
    read = threading.Event()  # ... and the second thread has read its date
    first = []

    def compile(form, flags=0):
        pattern = re.compile(form, flags)
        if threading.current_thread() is not threading.main_thread():
            first.append(pattern)
            if len(first) == 2:  # the first form compiled (and kept, if it is kept at once)
                compiled.set()
                read.wait(5.0)
        return pattern

    shim = types.SimpleNamespace(compile=compile, IGNORECASE=re.IGNORECASE, ASCII=re.ASCII)
    monkeypatch.setattr(hints, "re", shim)
    monkeypatch.setattr(hints, "_dates", type(hints._dates)())  # not compiled yet
    rfc_850 = "Wednesday, 21-Oct-15 07:28:00 GMT"
    results = []
    worker = threading.Thread(target=lambda: results.append(parse_retry_after(rfc_850, now=NOW)))
    worker.start()
    assert compiled.wait(5.0)
    try:
        mine = [
            parse_retry_after(value, now=NOW)
            for value in (rfc_850, "Wed, 21 Oct 2015 07:28:00 GMT")
        ]
    finally:
        read.set()
        worker.join()
    assert mine == [80.0, 80.0]
    assert results == [80.0]
    forms = ("Wed, 21 Oct 2015 07:28:00 GMT", rfc_850, "Wed Oct 21 07:28:00 2015")
    assert [parse_retry_after(value, now=NOW) for value in forms] == [80.0] * 3


def test_the_public_clamps_check_what_they_are_given_naming_it():
    """hints.server_wait and hints.sleep_for are documented for users' own loops: a
    negative maximum came back as a negative wait, a NaN one was ignored, None was a
    bare TypeError, a negative beyond gave a negative sleep.  Each is refused naming
    its parameter; the retry paths, whose policies checked them, clamp as before."""
    from backoff_iter.hints import server_wait, sleep_for

    rejects(lambda: server_wait(30, maximum=-1.0), ValueError, "maximum", "-1.0")
    rejects(lambda: server_wait(30, maximum=math.nan), ValueError, "maximum", "nan")
    rejects(lambda: server_wait(30, maximum=None), TypeError, "maximum", "None")
    rejects(lambda: sleep_for(1.0, 5.0, beyond=-3.0), ValueError, "beyond", "-3.0")
    rejects(lambda: sleep_for(-1.0, None), ValueError, "delay", "-1.0")
    with pytest.raises(ValueError, match=r"^delay must be a non-negative number, got -1\.0$"):
        sleep_for(-1.0, None)  # (not the wording of a schedule's check: "must give")
    rejects(lambda: sleep_for(0.5, math.nan), ValueError, "hint", "nan")
    rejects(lambda: sleep_for("1", None), TypeError, "delay", "'1'")
    assert server_wait(90, maximum=60) == 60.0
    assert server_wait(30, maximum=math.inf) == 30.0
    assert sleep_for(1, 5, beyond=2) == 3.0
    assert sleep_for(0.5, 10**400, beyond=math.inf) == math.inf
    assert sleep_for(1, 1e20) == sleep_for(1e20, None) == math.inf  # longer than any sleep
    assert sleep_for(1, 1e5) == 1e5
