"""The plan formulas against the geometric series computed directly."""

from __future__ import annotations

import math
from itertools import islice

import pytest
from checks import rejects
from hypothesis import given
from hypothesis import strategies as st

from backoff_iter import elapsed, exponential
from backoff_iter.planning import (
    elapsed_after,
    factor_for_ratio,
    next_sleep,
    plan,
    retries_by,
    retry_count_ratio,
)

bases = st.floats(min_value=0.001, max_value=1000)
factors = st.floats(min_value=1.0, max_value=3.0)
counts = st.integers(min_value=0, max_value=200)


def direct_sum(a, r, n):
    """T_n summed term by term."""
    return math.fsum(a * r**k for k in range(n))


@given(bases, factors, counts)
def test_elapsed_after_is_the_geometric_sum(a, r, n):
    """T_n = a (r^n - 1)/(r - 1) equals the sum of the first n sleeps."""
    assert elapsed_after(a, r, n) == pytest.approx(direct_sum(a, r, n), rel=1e-12, abs=1e-12)


@given(bases, factors, counts)
def test_next_sleep_after_n_sleeps_is_a_r_to_the_n(a, r, n):
    """a + (r - 1) T_n is the (n+1)-th sleep, a r^n."""
    assert next_sleep(a, r, direct_sum(a, r, n)) == pytest.approx(a * r**n, rel=1e-9)


@given(bases, st.floats(min_value=1.001, max_value=3.0), counts)
def test_retries_by_inverts_elapsed_after(a, r, n):
    """log_r(1 + (r - 1) T_n / a) recovers n."""
    assert retries_by(a, r, direct_sum(a, r, n)) == pytest.approx(n, abs=1e-6)


# r >= 1.01 keeps the count of sleeps to walk through in the thousands.
@given(bases, st.floats(min_value=1.01, max_value=3.0), st.floats(min_value=0, max_value=1e6))
def test_plan_counts_the_sleeps_that_fit(a, r, t):
    """plan's retries are the whole sleeps of exponential(a, r) whose running sum stays within T."""
    result = plan(a, r, t)
    totals = list(islice(elapsed(exponential(a, r)), result.retries + 1))
    assert all(total <= t * (1 + 1e-12) for total in totals[: result.retries])
    assert totals[result.retries] > t * (1 - 1e-12)
    assert result.sleep_after == pytest.approx(a * r**result.retries, rel=1e-12)
    if result.retries:
        assert result.sleep_before == pytest.approx(a * r ** (result.retries - 1), rel=1e-12)
    else:
        assert result.sleep_before is None


def test_the_issues_example_of_49_sleeps_at_factor_1_1():
    """Base 1, factor 1.1: after 49 sleeps the last is 97.017 and 1057.190 have passed."""
    result = plan(1, 1.1, 1057.19)
    assert result.retries == 49
    assert round(result.sleep_before, 3) == 97.017
    assert round(result.elapsed, 3) == 1057.19


@given(st.floats(min_value=0.001, max_value=2.0), bases, counts)
def test_a_ratio_q_gives_sleeps_that_are_q_times_the_time_waited(q, a, n):
    """With r = 1 + q every sleep is a + q × (time slept before it)."""
    r = factor_for_ratio(q)
    assert r == 1 + q
    assert a * r**n == pytest.approx(a + q * direct_sum(a, r, n), rel=1e-9)


def test_retry_count_ratio_is_the_long_run_ratio_of_counts():
    """Over a long time, count(r_new) / count(r) tends to log r / log r_new."""
    ratio = retry_count_ratio(2, 1.1)
    assert ratio == math.log(2) / math.log(1.1)

    def counts(elapsed):
        return retries_by(1, 1.1, elapsed) / retries_by(1, 2, elapsed)

    # The gap is the log(r - 1) terms, shrinking like 1 / log T.
    assert counts(1e300) == pytest.approx(ratio, rel=0.005)
    assert abs(counts(1e300) - ratio) < abs(counts(1e30) - ratio)


@pytest.mark.parametrize(
    "call, error, name",
    [
        (lambda: elapsed_after(0, 2, 3), ValueError, "base"),
        (lambda: elapsed_after(1, 0.5, 3), ValueError, "factor"),
        (lambda: elapsed_after(1, 2, -1), ValueError, "sleeps"),
        (lambda: elapsed_after(1, 2, 2.5), TypeError, "sleeps"),
        (lambda: retries_by(1, 2, -5), ValueError, "elapsed"),
        (lambda: factor_for_ratio(-0.1), ValueError, "ratio"),
        (lambda: retry_count_ratio(1, 2), ValueError, "factor"),
        (lambda: plan(1, 2, math.inf), ValueError, "elapsed"),
    ],
)
def test_bad_arguments_name_the_parameter(call, error, name):
    """Each plan function rejects bad input, naming the parameter."""
    rejects(call, error, name)


def test_plan_corrects_a_log_guess_that_is_one_too_high(monkeypatch):
    """plan settles the count downward when retries_by's floor overshoots."""
    from backoff_iter import planning

    real = planning.retries_by
    monkeypatch.setattr(planning, "retries_by", lambda a, r, t: real(a, r, t) + 2.0)
    assert planning.plan(1, 2, 20).retries == 4
    monkeypatch.setattr(planning, "retries_by", lambda a, r, t: real(a, r, t) - 2.0)
    assert planning.plan(1, 2, 20).retries == 4


def test_overflowing_plans_give_inf_not_an_error():
    """Sums and sleeps beyond floats are inf; a count beyond floats names sleeps."""
    assert elapsed_after(1, 2, 5000) == math.inf
    assert retries_by(1e-300, 2, 1e300) == pytest.approx(600 * math.log2(10), rel=1e-12)
    huge = plan(1e300, 10, 1.7e308)  # (r - 1) T / a fits, its sleep after does not
    assert (huge.retries, huge.sleep_after) == (9, math.inf)
    from backoff_iter.planning import _sleep_number

    assert _sleep_number(1, 2, 5000) == math.inf
    rejects(lambda: elapsed_after(1, 1.5, 10**400), ValueError, "sleeps")


def test_factor_one_is_linear_and_solved_in_closed_form():
    """plan(1, 1, 1e25) returns at once: 1e25 sleeps of 1 s."""
    result = plan(1, 1, 1e25)
    assert result.retries == int(1e25) and result.sleep_after == 1.0
    assert plan(2, 1, 7) == plan(2, 1, 7)._replace(retries=3, elapsed=6.0, sleep_before=2.0)
