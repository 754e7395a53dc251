"""attempts: n delays give n + 1 attempts, sleeping only between them."""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from itertools import islice

import pytest
from checks import rejects
from hypothesis import given
from hypothesis import strategies as st

from backoff_iter import attempts, constant, exponential


def test_n_delays_give_n_plus_one_attempts():
    """The issue's example: two delays, three attempts."""
    slept = []
    assert list(attempts(islice(constant(0), 2), sleep=slept.append)) == [1, 2, 3]
    assert slept == [0, 0]


@given(
    st.lists(st.floats(min_value=0, max_value=1e6), max_size=20),
    st.integers(min_value=1, max_value=25),
)
def test_sleeps_exactly_the_delays_between_attempts(delays, succeed_on):
    """Stopping after attempt k sleeps the first k-1 delays: none before the first, none after the last."""
    slept = []
    made = []
    for attempt in attempts(delays, sleep=slept.append):
        made.append(attempt)
        if attempt == succeed_on:
            break
    last = min(succeed_on, len(delays) + 1)
    assert made == list(range(1, last + 1))
    assert slept == delays[: last - 1]


def test_no_sleep_before_the_first_attempt():
    """The first attempt comes at once, before any delay is even taken."""
    taken = []

    def delays():
        taken.append("delay")
        yield 1.0

    loop = attempts(delays(), sleep=lambda d: taken.append(("sleep", d)))
    assert next(loop) == 1
    assert taken == []


def test_works_with_an_infinite_strategy():
    """An infinite schedule gives as many attempts as the caller asks for."""
    slept = []
    assert list(islice(attempts(exponential(1), sleep=slept.append), 5)) == [1, 2, 3, 4, 5]
    assert slept == [1, 2, 4, 8]


@pytest.mark.parametrize("bad", [-1, -0.5, math.nan])
def test_a_negative_or_nan_delay_is_never_slept(bad):
    """A bad delay from the user's iterable raises ValueError naming it, before sleep is called."""
    slept = []
    loop = attempts([1.0, bad], sleep=slept.append)
    assert next(loop) == 1 and next(loop) == 2
    with pytest.raises(ValueError, match="delays") as raised:
        next(loop)
    assert repr(bad) in str(raised.value)
    assert slept == [1.0]


def test_bad_arguments_raise_at_the_call():
    """A non-iterable delays or a non-callable sleep fails at once, naming the parameter."""
    rejects(lambda: attempts(3), TypeError, "delays", "3")
    rejects(lambda: attempts([1], sleep=3), TypeError, "sleep", "3")


@pytest.mark.parametrize("bad, error", [("1", TypeError), (Decimal("sNaN"), ValueError)])
def test_a_non_number_or_a_signalling_nan_delay_is_named_as_delays(bad, error):
    """A string is a TypeError, Decimal('sNaN') a ValueError, each naming delays: never another error."""
    loop = attempts([bad], sleep=lambda s: None)
    assert next(loop) == 1
    rejects(lambda: next(loop), error, "delays")


def test_every_real_zero_and_the_longest_sleep_are_slept():
    """0 as an int or a Fraction sleeps 0.0; the platform's longest sleep is slept, not taken for inf."""
    from backoff_iter._checks import LONGEST

    slept = []
    delays = [0, Fraction(0), Fraction(LONGEST)]
    assert list(attempts(delays, sleep=slept.append)) == [1, 2, 3, 4]
    assert slept == [0.0, 0.0, LONGEST]


@pytest.mark.parametrize("huge", [math.inf, 1e300, 10**400])
def test_a_delay_too_long_to_sleep_ends_the_attempts(huge):
    """inf, a delay past the platform's longest sleep or an int beyond floats: no next attempt, nothing slept."""
    slept = []
    assert list(attempts([0.5, huge, 1.0], sleep=slept.append)) == [1, 2]
    assert slept == [0.5]
