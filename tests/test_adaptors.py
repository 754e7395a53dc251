"""capped, jittered, within and elapsed keep their contracts on any iterable."""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from itertools import accumulate, count, islice
from random import Random

import pytest
from checks import Draws, rejects
from hypothesis import given
from hypothesis import strategies as st

from backoff_iter import capped, elapsed, exponential, jittered, within

delays_lists = st.lists(st.floats(min_value=0.0, max_value=1e6), max_size=50)
seeds = st.integers(min_value=0, max_value=2**32)


@given(delays_lists, st.floats(min_value=0.0, max_value=1e6) | st.just(math.inf))
def test_capped_is_min_of_cap_and_each_delay(delays, cap):
    """capped yields min(cap, d) for every d, in order, and nothing else."""
    assert list(capped(delays, cap)) == [min(cap, d) for d in delays]


def test_capped_works_on_an_infinite_strategy():
    """capped is lazy: it caps an uncapped infinite schedule."""
    assert list(islice(capped(exponential(1), 5), 8)) == [1, 2, 4, 5, 5, 5, 5, 5]


def test_a_negative_zero_delay_comes_out_as_zero():
    """-0.0 is 0.0 where an adaptor computes with a delay (as the module's docstring
    says a delay is read): it passed the plain floats' quick check as itself, and
    reached sleeps and events signed.  (within passes its delays on as given.)"""
    for adapted in (capped([-0.0], 1.0), elapsed([-0.0])):
        assert [math.copysign(1.0, delay) for delay in adapted] == [1.0]


@given(delays_lists, seeds)
def test_full_jitter_adaptor_is_uniform_zero_to_d(delays, seed):
    """jittered(kind="full") is uniform(0, d) drawn from the given rng."""
    rng = Random(seed)
    expected = [rng.uniform(0, d) for d in delays]
    assert list(jittered(delays, "full", rng=Random(seed))) == expected


@given(delays_lists, seeds)
def test_equal_jitter_adaptor_is_half_plus_uniform_half(delays, seed):
    """jittered(kind="equal") is d/2 + uniform(0, d/2) drawn from the given rng."""
    rng = Random(seed)
    expected = [d / 2 + rng.uniform(0, d / 2) for d in delays]
    assert list(jittered(delays, "equal", rng=Random(seed))) == expected


def test_equal_jitter_of_an_infinite_delay_still_takes_its_draw():
    """An infinite delay stays inf but takes its draw, as any delay does: the delay after it
    gets the next draw, so a schedule's draws do not shift with the values of its delays."""
    rng = Random(5)
    first, second = rng.random(), rng.random()
    assert first != second
    assert list(jittered([math.inf, 2.0], "equal", rng=Random(5))) == [math.inf, 1.0 + second]


@given(delays_lists, st.floats(min_value=1e-9, max_value=1.0), seeds)
def test_fraction_jitter_is_uniform_within_plus_minus_fraction(delays, fraction, seed):
    """jittered(kind=f) is uniform(d·(1-f), d·(1+f)), inside that window."""
    rng = Random(seed)
    expected = [rng.uniform(d * (1 - fraction), d * (1 + fraction)) for d in delays]
    got = list(jittered(delays, fraction, rng=Random(seed)))
    assert got == expected
    assert all(d * (1 - fraction) <= j <= d * (1 + fraction) for d, j in zip(delays, got))


def test_fraction_jitter_of_a_delay_whose_upper_end_is_beyond_floats_is_never_nan():
    """uniform(d·(1-f), d·(1+f)) of a finite d whose d·(1+f) is inf: the formula's value,
    d·(1-f) for a draw of exactly 0 (inf times it was NaN, which _jitter promises never
    to yield); an infinite delay keeps its values (0.0 at f = 1 and a draw of 0)."""
    huge = sys.float_info.max
    got = list(jittered([huge, huge, 1e308], 0.5, rng=Draws(0.0, 0.25, 0.0)))
    assert got == [huge * 0.5, pytest.approx(huge * 0.75, rel=1e-15), 5e307]
    assert list(jittered([math.inf] * 3, 1.0, rng=Draws(0.0, 0.5, 0.0))) == [0.0, math.inf, 0.0]
    assert list(jittered([math.inf], 0.5, rng=Draws(0.0))) == [math.inf]
    assert list(jittered([10.0], 0.5, rng=Draws(0.0))) == [5.0]  # a finite window: its low end


def test_fraction_jitter_near_the_largest_float_is_the_formula_not_inf():
    """Where d·(1+f) outgrows a float, uniform(d·(1-f), d·(1+f)) mostly does not: 1e308
    jittered by 1.0 with a draw of 0.25 is 5e307 (0 + 2e308 · 0.25), not inf; inf only
    for a value beyond floats."""
    assert list(jittered([1e308], 1.0, rng=Draws(0.25))) == [1e308 * 0.5]
    got = list(jittered([1.5e308, 1.5e308], 0.5, rng=Draws(0.1, 0.9)))
    low, high = Fraction(1.5e308) / 2, Fraction(1.5e308) * 3 / 2
    assert got[0] == pytest.approx(float(low + (high - low) * Fraction(0.1)), rel=1e-15)
    assert got[1] == math.inf  # 7.5e307 + 1.5e308 · 0.9 is beyond floats


def test_a_class_given_as_rng_is_refused_when_made_and_one_of_static_draws_is_taken():
    """rng=Random (the class, meant as Random(seed)) is refused naming rng wherever jitter is
    made - it was taken, and the first draw raised a TypeError naming nothing; a class whose
    random() or uniform() is a static or class method is an rng all the same."""
    from backoff_iter import AdaptiveThrottle, full_jitter, per_failure, smooth_jitter

    class Halves:
        random = staticmethod(lambda: 0.5)

    class Quarters:
        @classmethod
        def uniform(cls, low, high):
            return 0.25

    class Seeded(Random):
        pass

    for make in (
        lambda rng: jittered([2.0], rng=rng),
        lambda rng: full_jitter(1.0, rng=rng),
        lambda rng: smooth_jitter(1.0, rng=rng),
        lambda rng: per_failure(default=[1.0], jitter="full", rng=rng),
        lambda rng: AdaptiveThrottle(rng=rng),
    ):
        for cls in (Random, Seeded):
            rejects(lambda m=make, c=cls: m(c), TypeError, "rng", "class", "instance")
    assert list(jittered([2.0, 2.0], rng=Halves)) == [1.0, 1.0]
    assert list(jittered([2.0], rng=Quarters)) == [0.5]


def test_jittered_defaults_to_full_jitter():
    """Without a kind, jittered spreads over [0, d]."""
    assert list(jittered([4, 4], rng=Random(9))) == list(jittered([4, 4], "full", rng=Random(9)))


@given(delays_lists, st.floats(min_value=0.0, max_value=1e7))
def test_within_stops_before_the_first_delay_that_would_overshoot(delays, total):
    """within yields a prefix whose running sum stays within total; the next one would pass it."""
    got = list(within(delays, total))
    assert got == delays[: len(got)]
    sums = list(accumulate(got))
    assert all(s <= total for s in sums)
    if len(got) < len(delays):
        spent = sums[-1] if sums else 0.0
        assert spent + delays[len(got)] > total


def test_within_ends_an_infinite_schedule():
    """within turns an infinite strategy into a finite budget, exactly filled when it fits."""
    assert list(within(exponential(1), 15)) == [1, 2, 4, 8]
    assert list(within(exponential(1), 14.9)) == [1, 2, 4]
    assert list(within(exponential(1), 0)) == []


def test_within_infinite_total_passes_everything():
    """An infinite budget is no budget."""
    assert list(islice(within(count(), math.inf), 5)) == [0, 1, 2, 3, 4]


@given(delays_lists)
def test_elapsed_is_the_running_total(delays):
    """elapsed yields the time slept so far after each delay."""
    assert list(elapsed(delays)) == list(accumulate(delays))


def test_adaptors_are_lazy_on_infinite_input():
    """Every adaptor takes items only as they are asked for."""
    taken = []

    def source():
        for i in count(1):
            taken.append(i)
            yield float(i)

    for adaptor in (
        lambda d: capped(d, 3),
        lambda d: jittered(d, "equal", rng=Random(0)),
        lambda d: jittered(d, 0.5, rng=Random(0)),
        lambda d: within(d, 1000),
        elapsed,
    ):
        taken.clear()
        list(islice(adaptor(source()), 4))
        assert taken == [1, 2, 3, 4]


BAD = [
    (lambda: capped([1], -1), ValueError, ["cap", "-1"]),
    (lambda: capped([1], math.nan), ValueError, ["cap", "nan"]),
    (lambda: capped(5, 1), TypeError, ["delays", "5"]),
    (lambda: jittered([1], "half"), ValueError, ["kind", "'half'"]),
    (lambda: jittered([1], 0), ValueError, ["kind", "0"]),
    (lambda: jittered([1], 1.5), ValueError, ["kind", "1.5"]),
    (lambda: jittered([1], math.nan), ValueError, ["kind", "nan"]),
    (lambda: jittered([1], True), TypeError, ["kind", "True"]),
    (lambda: jittered([1], None), TypeError, ["kind", "None"]),
    (lambda: jittered([1], rng="seed"), TypeError, ["rng", "'seed'"]),
    (lambda: jittered(3.0), TypeError, ["delays", "3.0"]),
    (lambda: within([1], -1), ValueError, ["total", "-1"]),
    (lambda: within([1], "10"), TypeError, ["total", "'10'"]),
    (lambda: within(None, 1), TypeError, ["delays", "None"]),
    (lambda: elapsed(7), TypeError, ["delays", "7"]),
]


@pytest.mark.parametrize("call, error, words", BAD)
def test_bad_arguments_raise_at_the_call(call, error, words):
    """Adaptors check their arguments before anything is iterated, naming what was wrong."""
    rejects(call, error, *words)


@pytest.mark.parametrize(
    "adaptor",
    [lambda d: capped(d, 1.0), lambda d: within(d, 10.0), lambda d: jittered(d), elapsed],
    ids=["capped", "within", "jittered", "elapsed"],
)
@pytest.mark.parametrize("text", ["1.5", b"1.5"])
def test_a_string_of_delays_is_refused_when_the_adaptor_is_made(adaptor, text):
    """capped("1.5", ...) and friends: an argument error naming delays at once, not at the first value."""
    rejects(lambda: adaptor(text), TypeError, "delays")


def test_adaptors_read_odd_delays_as_the_drivers_do():
    """An integer beyond floats is inf (it raised OverflowError), a Fraction or a Decimal is
    its float (a Decimal raised TypeError in jittered and within); a NaN, negative or
    non-number delay is the argument error naming delays, as the drivers say it (within
    stopped bounding after a NaN: every later delay passed)."""
    from decimal import Decimal
    from fractions import Fraction

    huge = 10**400
    assert list(jittered([huge, Fraction(huge, 3)], "full", rng=Random(1))) == [math.inf] * 2
    assert list(jittered([huge], "equal", rng=Random(1))) == [math.inf]
    assert list(jittered([huge], 0.5, rng=Random(1))) == [math.inf]
    (half,) = jittered([Decimal("2")], "equal", rng=Random(1))
    assert 1.0 <= half <= 2.0 and type(half) is float
    assert list(within([1, Decimal("1"), huge, 1], 5)) == [1, Decimal("1")]
    assert [(total, type(total)) for total in elapsed([1, 2, 3])] == [(1, int), (3, int), (6, int)]
    assert list(elapsed([1.0, Fraction(1, 2), huge, 1.0])) == [1.0, 1.5, math.inf, math.inf]
    odd = [(math.nan, ValueError), (-1.0, ValueError), (-1, ValueError), ("1", TypeError)]
    for adaptor in (lambda d: within(d, 5.0), jittered, elapsed):
        for bad, error in [*odd, (None, TypeError)]:  # (a list, checked whole, and as it comes)
            delays = [1.0, bad, 100.0, 100.0]
            rejects(lambda a=adaptor, d=delays: list(a(d)), error, "delays")
            rejects(lambda a=adaptor, d=delays: list(a(iter(d))), error, "delays")
    assert list(capped([1, Decimal("5"), Fraction(1, 2), huge], 4)) == [1, 4.0, 0.5, 4.0]
    for bad, error in odd:  # capped read none of its delays: a NaN became the cap
        rejects(lambda b=bad: list(capped([1.0, b], 4.0)), error, "delays")
        rejects(lambda b=bad: list(capped(iter([1.0, b]), 4.0)), error, "delays")


def test_a_whole_number_of_seconds_within_floats_is_kept_whatever_its_size():
    """An int too long to sleep but within floats is its value, as a float that size is
    (5 * 10**9 s was inf in elapsed and within, where 5e9 was not); an int delay that
    needs no change stays an int."""
    years = 5 * 10**9
    assert list(elapsed([1, years])) == [1, years + 1] == list(elapsed([1, float(years)]))
    assert list(within([years, 1], 1e10)) == [years, 1]
    assert list(capped([years], math.inf)) == [years]
    assert [type(total) for total in elapsed([1, years])] == [int, int]  # kept, not made floats
    assert list(elapsed([Fraction(years)])) == [float(years)]


def test_elapsed_past_the_largest_float_in_whole_numbers_then_a_float_is_inf():
    """Whole-number delays summing past the largest float stay an exact int, and the float
    after them makes the total inf (int + float raised OverflowError: "int too large")."""
    big = int(sys.float_info.max)
    assert list(elapsed([big, big, 0.5, 1])) == [big, 2 * big, math.inf, math.inf]
    assert list(elapsed([big, big, math.inf])) == [big, 2 * big, math.inf]


@pytest.mark.parametrize(
    "adaptor",
    [
        lambda delays: capped(delays, 4),
        lambda delays: jittered(delays, rng=Random(1)),
        lambda delays: within(delays, 10),
        elapsed,
    ],
    ids=["capped", "jittered", "within", "elapsed"],
)
def test_a_list_given_whole_is_checked_as_the_adaptor_is_made(adaptor):
    """capped([1, -1], 4) and the others: a list (or tuple) with a bad delay is
    refused when the adaptor is made, as the drivers refuse one; it was refused
    only when the bad delay came up, items later."""
    rejects(lambda: adaptor([1, -1]), ValueError, "delays", "-1")
    rejects(lambda: adaptor((1, "2")), TypeError, "delays", "'2'")
    assert list(adaptor([1, 2]))  # a good one is taken as it is


def test_a_negative_zero_of_another_kind_is_read_as_zero():
    """Decimal("-0") reads as 0.0, with its sign: an adaptor
    yields 0.0, as for the float -0.0 (it yielded -0.0, a sleep printed "-0.0")."""
    from decimal import Decimal

    for made in (list(capped([Decimal("-0")], 4)), list(elapsed([Decimal("-0")]))):
        assert made == [0.0] and math.copysign(1.0, made[0]) == 1.0
