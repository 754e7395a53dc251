"""The plan formulas against an exact reference, over every finite input.

The reference computes the README's formulas - ``T_n = a (r^n - 1)/(r - 1)``,
the next sleep ``a r^n = a + (r - 1) T_n``, ``n = log_r(1 + (r - 1) T / a)`` -
in 60-digit decimal arithmetic from the floats' exact values, so it has no
overflow, no cancellation and no rounding a float result could hide behind.
"""

from __future__ import annotations

import math
import sys
from contextlib import contextmanager
from decimal import Context, Decimal
from fractions import Fraction
from itertools import islice

import pytest
from checks import rejects
from hypothesis import example, given
from hypothesis import strategies as st

from backoff_iter import elapsed, exponential
from backoff_iter.planning import (
    Plan,
    elapsed_after,
    factor_for_ratio,
    next_sleep,
    plan,
    retries_by,
    retry_count_ratio,
)

# -- the reference -------------------------------------------------------------------

EXACT = Context(prec=60, Emax=10**9, Emin=-(10**9))
FLOAT_MAX = Decimal(sys.float_info.max)
# A result within this relative distance of the reference is right: a few
# roundings of 2**-53 each (the functions promise about 8; 32 leaves room).
TOLERANCE = Decimal(32) * Decimal(2) ** -53


def exact_power(r, n):
    """r**n, exactly rounded to 60 digits (Infinity far beyond any float)."""
    if r == 1.0:
        return Decimal(1)
    if n > 2**1000 or n * math.log10(r) > 1e8:
        return Decimal("Infinity")
    return EXACT.power(Decimal(r), n)


def exact_elapsed(a, r, n):
    """T_n = a (r^n - 1) / (r - 1), or a n for r = 1."""
    a, r_ = Decimal(a), Decimal(r)
    if r == 1.0:
        return EXACT.multiply(a, n)
    grown = EXACT.subtract(exact_power(r, n), 1)
    return EXACT.divide(EXACT.multiply(a, grown), EXACT.subtract(r_, 1))


def exact_sleep(a, r, n):
    """The sleep number n (from 0): a r^n."""
    return EXACT.multiply(Decimal(a), exact_power(r, n))


def exact_retries(a, r, t):
    """n = log_r(1 + (r - 1) T / a), T / a for r = 1."""
    a, r_, t = Decimal(a), Decimal(r), Decimal(t)
    if r == 1.0:
        return EXACT.divide(t, a)
    x = EXACT.divide(EXACT.multiply(EXACT.subtract(r_, 1), t), a)
    # 1 + x keeps x's 60 digits only with as many more as x has leading zeros
    wide = EXACT.copy()
    wide.prec += max(0, -x.adjusted()) if x else 0
    return EXACT.divide(wide.ln(wide.add(1, x)), EXACT.ln(r_))


def close(value, reference, tolerance=TOLERANCE):
    """*value* is the float nearest *reference*, to *tolerance*: inf beyond the
    largest float, a tiny number near zero within the subnormals' spacing."""
    if reference > FLOAT_MAX * (1 + tolerance):
        return value == math.inf
    if value == math.inf:
        return reference > FLOAT_MAX * (1 - tolerance)
    error = abs(Decimal(value) - reference)
    return error <= tolerance * reference or error <= Decimal(2) ** -1070


# -- inputs: every finite float they accept, with the hard corners weighted -------------

bases = st.one_of(
    st.floats(min_value=5e-324, max_value=sys.float_info.max),
    st.floats(min_value=1e-3, max_value=1e3),
)
factors = st.one_of(
    st.just(1.0),
    st.floats(min_value=1.0, max_value=1.0 + 1e-9),  # log r and r - 1 near their limits
    st.floats(min_value=1.0, max_value=4.0),
    st.floats(min_value=1.0, max_value=sys.float_info.max),
)
times = st.one_of(
    st.floats(min_value=0.0, max_value=sys.float_info.max),
    st.floats(min_value=0.0, max_value=1e4),
)
sleep_counts = st.one_of(
    st.integers(min_value=0, max_value=100),
    st.integers(min_value=0, max_value=2**53),
    st.integers(min_value=0, max_value=2**80),
)


@given(bases, factors, sleep_counts)
@example(1e-300, 2.0, 1100)  # 2**1100 overflows, the sum (1.4e31) does not
@example(1e-308, 1.0000000001, 7_100_000_000_000)  # r**n overflows, T_n is 2.2e10
@example(1e-300, 1.0, 10**400)  # a count beyond floats, a sum of 1e100
@example(5e-324, 1.0 + 2**-52, 2**62)
@example(5e-324, 1e202, 3)  # r**2 is no float, r**3 / r is
def test_elapsed_after_is_the_exact_geometric_sum(a, r, n):
    """T_n = a (r^n - 1)/(r - 1), to a few roundings, inf only beyond the largest float."""
    assert close(elapsed_after(a, r, n), exact_elapsed(a, r, n))


@given(bases, factors, sleep_counts)
def test_next_sleep_after_n_sleeps_is_a_r_to_the_n(a, r, n):
    """a + (r - 1) T_n, from the float T_n, is the (n+1)-th sleep a r^n."""
    slept = elapsed_after(a, r, n)
    if slept < math.inf:
        assert close(next_sleep(a, r, slept), exact_sleep(a, r, n), 3 * TOLERANCE)


@given(bases, factors, times)
@example(1e-300, 1.001, 1e300)  # the issue's case: 1,375,330.508 exactly
@example(1e-308, 1.0000000001, 1e308)
@example(1e-300, 1.0, 1e300)  # 1e600 sleeps: beyond floats
def test_retries_by_is_the_exact_logarithm(a, r, t):
    """log_r(1 + (r - 1) T / a), to a few roundings (inf only when the count outgrows floats)."""
    assert close(retries_by(a, r, t), exact_retries(a, r, t))


def test_the_issues_plan_counts_1375330_retries():
    """plan(1e-300, 1.001, 1e300): 1,375,330.508 exactly, so 1,375,330 whole sleeps (once 710,137)."""
    result = plan(1e-300, 1.001, 1e300)
    assert result.retries == 1_375_330
    assert close(result.exact, exact_retries(1e-300, 1.001, 1e300))
    assert result.elapsed < 1e300 < elapsed_after(1e-300, 1.001, result.retries + 1)


@given(bases, factors, times)
@example(1e-300, 1.001, 1e300)
@example(1e-308, 1.0000000001, 1e308)
@example(1e-300, 1.0, 1e300)
@example(1.0, 2.0, 15.0)  # T_4 is exactly 15
@example(1.0, 2.0, 2.0**1023)  # the sleep after, 2**1023, is just a float
@example(1.0, 1.0 + 2**-52, sys.float_info.max)
def test_plan_counts_the_whole_sleeps_that_fit(a, r, t):
    """retries is the largest n with T_n <= T (to the tolerance, at a boundary);
    slept, the sleeps around it and the real count are the exact ones."""
    result = plan(a, r, t)
    n = result.retries
    assert isinstance(n, int) and n >= 0
    assert exact_elapsed(a, r, n) <= Decimal(t) * (1 + TOLERANCE)
    assert exact_elapsed(a, r, n + 1) > Decimal(t) * (1 - TOLERANCE)
    assert close(result.elapsed, exact_elapsed(a, r, n))
    assert result.elapsed <= t
    assert close(result.sleep_after, exact_sleep(a, r, n))
    if n == 0:
        assert result.sleep_before is None
    else:
        assert close(result.sleep_before, exact_sleep(a, r, n - 1))
    assert close(result.exact, exact_retries(a, r, t))


@contextmanager
def evaluations():
    """The (a, r, t, n) of every T_n <= T that plan decides, while the block runs."""
    from backoff_iter import planning

    calls = []
    real = planning._fits

    def counted(a, r, t, n):
        calls.append((a, r, t, n))
        return real(a, r, t, n)

    planning._fits = counted
    try:
        yield calls
    finally:
        planning._fits = real


@given(bases, factors, times)
@example(1e-308, 1.0000000001, 1e308)  # once more than 20 s of stepping down by one
@example(5e-324, 1.0 + 2**-52, sys.float_info.max)
def test_plan_takes_a_bounded_number_of_steps_for_any_input(a, r, t):
    """However large the count, plan evaluates T_n a few dozen times (bisection, not stepping)."""
    with evaluations() as calls:
        plan(a, r, t)
    assert len(calls) <= 80


@pytest.mark.parametrize("guess", [*range(12), 1000, 10**6])
def test_plan_settles_any_wrong_guess_in_a_few_steps(monkeypatch, guess):
    """Whatever count the logarithm guesses - on a boundary T_n = T, or far off - plan
    finds the right one by doubling its bracket and bisecting."""
    from backoff_iter import planning

    monkeypatch.setattr(planning, "retries_by", lambda a, r, t: float(guess))
    with evaluations() as calls:
        assert planning.plan(1, 2, 15).retries == 4  # T_4 = 15 exactly
        assert planning.plan(1, 2, 20).retries == 4
        assert planning.plan(1e-300, 1.001, 1e300).retries == 1_375_330
    assert len(calls) <= 3 * 80


# Factors and first sleeps of few binary digits, whose sums T_n are often floats exactly.
DYADIC_FACTORS = [1.0625, 1.125, 1.25, 1.5, 1.75, 2.0, 3.0, 4.0, 7.0, 10.0]
DYADIC_BASES = [1.0, 0.5, 3.0, 0.1, 1e-3, 5e-324, 1e300]


@pytest.mark.parametrize("r", DYADIC_FACTORS)
def test_plan_counts_a_sleep_that_ends_right_at_the_elapsed_time(r):
    """When T_n is exactly the elapsed time, n sleeps fit (slept: T_n); a hair less, n - 1.
    plan(0.1, 4, 0.1) said 0 retries and the first sleep, 0.1, "would not fit"."""
    r_ = Fraction(r)
    ties = 0
    for a in DYADIC_BASES:
        for n in range(1, 200):
            exact = Fraction(a) * (r_**n - 1) / (r_ - 1)
            if exact > Fraction(sys.float_info.max):
                break
            t = float(exact)
            if Fraction(t) != exact:
                continue
            ties += 1
            result = plan(a, r, t)
            assert (result.retries, result.elapsed) == (n, t), (a, n)
            assert result.sleep_after == float(Fraction(a) * r_**n)
            below = plan(a, r, math.nextafter(t, 0.0))
            assert below.retries == n - 1, (a, n)
    assert ties >= 10


def test_plan_counts_exactly_where_a_float_sum_would_round_onto_the_elapsed_time():
    """Small counts are decided in whole numbers: T_1 = a fits in a; T_2 = 1 + r, which
    rounds to r = the largest float, does not fit in it (it said 2 retries)."""
    assert plan(0.1, 4, 0.1) == Plan(1, plan(0.1, 4, 0.1).exact, 0.1, 0.1, 0.4)
    assert plan(1, 10, 1111111111111111.0).retries == 16  # 1 + 10 + ... + 10**15
    top = plan(1, sys.float_info.max, sys.float_info.max)
    assert (top.retries, top.elapsed, top.sleep_after) == (1, 1.0, sys.float_info.max)


@given(bases, factors, st.integers(min_value=0, max_value=4096))
@example(0.1, 4.0, 1)  # was 0.10000000000000002
@example(5e-324, 1.0 + 2**-52, 77)
@example(1.0, sys.float_info.max, 2)  # 1 + r rounds to r; 1 + r + r**2 is beyond floats
@example(1.0, sys.float_info.max, 3)
def test_elapsed_after_a_few_sleeps_is_rounded_once(a, r, n):
    """While r**n has at most 4096 bits, T_n is the float nearest the exact sum (T_1 is a)."""
    r_ = Fraction(r)
    n = min(n, 4096 // r_.numerator.bit_length())
    exact = Fraction(a) * (r_**n - 1) / (r_ - 1) if r > 1 else Fraction(a) * n
    try:
        expected = float(exact)  # rounded once (int / int)
    except OverflowError:
        expected = math.inf
    assert elapsed_after(a, r, n) == expected
    assert elapsed_after(a, r, 1) == a


def test_the_issues_example_of_49_sleeps_at_factor_1_1():
    """Base 1, factor 1.1: after 49 sleeps the last is 97.017 and 1057.190 have passed."""
    result = plan(1, 1.1, 1057.19)
    assert result.retries == 49
    assert round(result.sleep_before, 3) == 97.017
    assert round(result.elapsed, 3) == 1057.19


# r >= 1.01 keeps the count of sleeps to walk through in the thousands.
@given(bases, st.floats(min_value=1.01, max_value=3.0), st.floats(min_value=0, max_value=1e6))
def test_plan_agrees_with_the_running_sum_of_the_strategy(a, r, t):
    """plan's retries are the whole sleeps of exponential(a, r) whose running sum stays within T."""
    result = plan(a, r, t)
    totals = list(islice(elapsed(exponential(a, r)), result.retries + 1))
    assert all(total <= t * (1 + 1e-12) for total in totals[: result.retries])
    assert totals[result.retries] > t * (1 - 1e-12)


@given(st.floats(min_value=0.0, max_value=1e6), bases, st.integers(min_value=0, max_value=40))
def test_a_ratio_q_gives_sleeps_that_are_q_times_the_time_waited(q, a, n):
    """With r = 1 + q every sleep is a + q × (time slept before it), exactly in rationals."""
    r = factor_for_ratio(q)
    assert r == 1 + q
    r_, a_ = Fraction(r), Fraction(a)
    slept = sum(a_ * r_**k for k in range(n))
    assert a_ * r_**n == a_ + (r_ - 1) * slept


def test_factor_one_is_linear_and_solved_exactly():
    """Factor 1: floor(T / a) sleeps of a, in integers, also beyond floats (1e600 sleeps)."""
    assert plan(2, 1, 7) == Plan(retries=3, exact=3.5, elapsed=6.0, sleep_before=2.0, sleep_after=2)
    result = plan(1, 1, 1e25)
    assert result.retries == int(1e25) and result.sleep_after == 1.0
    huge = plan(1e-300, 1, 1e300)
    assert huge.retries == int(Fraction(1e300) / Fraction(1e-300))
    assert huge.exact == math.inf and huge.elapsed <= 1e300
    assert huge.elapsed == pytest.approx(1e300, rel=1e-15)


def test_retry_count_ratio_is_the_long_run_ratio_of_counts():
    """Over a long time, count(r_new) / count(r) tends to log r / log r_new."""
    ratio = retry_count_ratio(2, 1.1)
    assert ratio == math.log(2) / math.log(1.1)

    def counts(elapsed):
        return retries_by(1, 1.1, elapsed) / retries_by(1, 2, elapsed)

    # The gap is the log(r - 1) terms, shrinking like 1 / log T.
    assert counts(1e300) == pytest.approx(ratio, rel=0.005)
    assert abs(counts(1e300) - ratio) < abs(counts(1e30) - ratio)


def test_sums_and_sleeps_beyond_floats_are_inf_never_an_error():
    """Beyond the largest float: inf, from every function, for any whole count."""
    assert elapsed_after(1, 2, 5000) == math.inf
    assert elapsed_after(1, 1.5, 10**400) == math.inf
    assert elapsed_after(1, 1.0 + 2**-52, 2**200) == math.inf
    huge = plan(1e300, 10, 1.7e308)  # (r - 1) T / a fits, its sleep after does not
    assert (huge.retries, huge.sleep_after) == (9, math.inf)
    assert next_sleep(1, 3, sys.float_info.max) == math.inf
    assert retries_by(1, 2, math.inf) == retries_by(1, 1, math.inf) == math.inf


def test_next_sleep_of_factor_1_is_the_base_even_after_inf():
    """Factor 1 sleeps the base after any time slept, inf too: never NaN (0 * inf)."""
    assert next_sleep(2, 1, math.inf) == next_sleep(2, 1, 1e308) == next_sleep(2, 1, 0) == 2.0


@pytest.mark.parametrize(
    "call, error, name",
    [
        (lambda: elapsed_after(0, 2, 3), ValueError, "base"),
        (lambda: elapsed_after(1, 0.5, 3), ValueError, "factor"),
        (lambda: elapsed_after(1, 2, -1), ValueError, "sleeps"),
        (lambda: elapsed_after(1, 2, 2.5), TypeError, "sleeps"),
        (lambda: retries_by(1, 2, -5), ValueError, "elapsed"),
        (lambda: factor_for_ratio(-0.1), ValueError, "ratio"),
        (lambda: factor_for_ratio(math.inf), ValueError, "ratio"),
        (lambda: retry_count_ratio(1, 2), ValueError, "factor"),
        (lambda: retry_count_ratio(2, 1), ValueError, "new_factor"),
        (lambda: plan(1, 2, math.inf), ValueError, "elapsed"),
        (lambda: plan(1, math.inf, 3), ValueError, "factor"),
        (lambda: next_sleep(1, 2, math.nan), ValueError, "elapsed"),
    ],
)
def test_bad_arguments_name_the_parameter(call, error, name):
    """Each plan function rejects bad input, naming the parameter."""
    rejects(call, error, name)


def test_a_count_may_be_a_numpy_integer_but_no_bool():
    """elapsed_after(1, 2, numpy.int64(3)): a numpy integer is a whole number,
    as numpy floats are numbers everywhere here (it was refused); numpy's bool
    and Python's are not."""
    import numpy  # (matplotlib's, of the test extra)

    assert elapsed_after(1, 2, numpy.int64(3)) == elapsed_after(1, 2, 3) == 7.0
    for bad in (numpy.bool_(True), True, 3.0):
        rejects(lambda bad=bad: elapsed_after(1, 2, bad), TypeError, "sleeps")
