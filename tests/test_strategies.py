"""The strategies against the issue's formulas, bounds, errors and long runs."""

from __future__ import annotations

import math
import random
import sys
import threading
import tracemalloc
from decimal import Decimal, localcontext
from fractions import Fraction
from itertools import islice
from random import Random

import formulas
import pytest
from checks import Draws, in_threads, rejects
from hypothesis import given
from hypothesis import strategies as st
from more_itertools import nth

from backoff_iter import (
    constant,
    decorrelated,
    equal_jitter,
    exponential,
    fibonacci,
    full_jitter,
    linear,
    smooth_jitter,
)

INF = math.inf
bases = st.floats(min_value=0.0, max_value=100.0)
positive_bases = st.floats(min_value=0.001, max_value=100.0)
caps = st.floats(min_value=0.0, max_value=1e6) | st.just(INF)
factors = st.floats(min_value=1.0, max_value=10.0)
seeds = st.integers(min_value=0, max_value=2**32)


def take(iterator, n):
    return list(islice(iterator, n))


# -- exact values: the formulas to the last float ----------------------------


@given(bases, factors, caps)
def test_exponential_is_the_formula_exactly(base, factor, cap):
    """exponential yields min(cap, base * factor**attempt), bit for bit."""
    assert take(exponential(base, factor, cap=cap), 40) == formulas.exponential(
        base, factor, cap, 40
    )


@given(bases, st.none() | bases, caps)
def test_linear_is_the_formula_exactly(base, step, cap):
    """linear yields min(cap, base + step * attempt), step defaulting to base."""
    expected_step = base if step is None else step
    assert take(linear(base, step, cap=cap), 50) == formulas.linear(base, expected_step, cap, 50)


def test_linear_does_not_drift_where_repeated_addition_would():
    """Value 10**6 of linear(0.1) is 0.1 + 0.1 * 10**6, not a sum of a million 0.1s."""
    assert nth(linear(0.1), 10**6) == 0.1 + 0.1 * 10**6
    drifted = 0.1
    for _ in range(10**6):
        drifted += 0.1
    assert drifted != 0.1 + 0.1 * 10**6  # so the check above can fail


@given(bases, caps)
def test_fibonacci_is_base_times_the_fibonacci_numbers(base, cap):
    """fibonacci yields base·1, base·1, base·2, base·3, base·5, ... capped."""
    assert take(fibonacci(base, cap=cap), 70) == formulas.fibonacci(base, cap, 70)


def test_first_delays_of_the_deterministic_strategies_are_base():
    """attempt counts from 0, so the first delay is base."""
    for strategy in (linear, exponential, fibonacci):
        assert next(strategy(0.25)) == 0.25
    assert take(constant(0.5), 3) == [0.5, 0.5, 0.5]
    assert next(constant()) == 1.0


@given(positive_bases, caps, st.floats(min_value=1.0, max_value=4.0), seeds)
def test_full_jitter_is_the_formula_exactly(base, cap, factor, seed):
    """full_jitter equals uniform(0, min(cap, base * factor**attempt)) drawn from the same rng."""
    got = take(full_jitter(base, cap, factor=factor, rng=Random(seed)), 30)
    assert got == formulas.full_jitter(base, cap, factor, 30, Random(seed))


@given(positive_bases, caps, st.floats(min_value=1.0, max_value=4.0), seeds)
def test_equal_jitter_is_the_formula_exactly(base, cap, factor, seed):
    """equal_jitter equals t/2 + uniform(0, t/2) drawn from the same rng."""
    got = take(equal_jitter(base, cap, factor=factor, rng=Random(seed)), 30)
    assert got == formulas.equal_jitter(base, cap, factor, 30, Random(seed))


@given(positive_bases, caps, st.floats(min_value=1.01, max_value=5.0), seeds)
def test_decorrelated_is_the_formula_exactly(base, cap, factor, seed):
    """decorrelated equals sleep = min(cap, uniform(base, sleep * factor)) from sleep = base."""
    got = take(decorrelated(base, cap, factor=factor, rng=Random(seed)), 30)
    assert got == formulas.decorrelated(base, cap, factor, 30, Random(seed))


@given(positive_bases, caps, seeds)
def test_smooth_jitter_is_pollys_formula_exactly(base, cap, seed):
    """smooth_jitter equals min(cap, (g(t_i) - g(t_i-1)) * base / 1.4), the cap repeating once reached."""
    got = take(smooth_jitter(base, cap, rng=Random(seed)), 30)
    assert got == formulas.smooth_jitter(base, cap, 30, Random(seed))


# Every way a schedule's delays below the cap are made: few (a cached tuple),
# from ints, many (computed per attempt), a base of 0, a factor of 1, a base at
# the cap, and the same below an infinite cap.
SCHEDULES = [
    (0.1, 30.0, 2.0),
    (1, 8, 2),
    (1e-3, 1e300, 1.01),
    (0.0, 5.0, 2.0),
    (0.5, 5.0, 1.0),
    (5.0, 1.0, 2.0),
    (1.0, INF, 1e10),
    (0.1, INF, 2.0),
]


@pytest.mark.parametrize("base, cap, factor", SCHEDULES)
def test_growing_strategies_are_their_formulas_however_their_delays_are_made(base, cap, factor):
    """Made twice (the second from the cache of schedules), each strategy of
    base * factor**attempt gives its formula's values to the last float."""
    from backoff_iter.strategies import _plan, _planned

    _planned.cache_clear()
    _plan.cache_clear()
    for _ in range(2):
        assert take(exponential(base, factor, cap=cap), 31) == formulas.exponential(
            base, factor, cap, 31
        )
        for strategy in (full_jitter, equal_jitter):
            got = take(strategy(base, cap, factor=factor, rng=Random(5)), 31)
            formula = getattr(formulas, strategy.__name__)
            assert got == formula(base, cap, factor, 31, Random(5)), strategy


@pytest.mark.parametrize("base, cap, factor", [*SCHEDULES, (1.0, INF, 1e100)])
def test_jitters_make_one_draw_per_value(base, cap, factor):
    """Below the cap, at it and at an infinite one (reached at the fifth value
    of the last schedule), each value draws once from the rng: no more, no less."""
    for strategy in (full_jitter, equal_jitter):
        mine, theirs = Random(7), Random(7)
        take(strategy(base, cap, factor=factor, rng=mine), 40)
        for _ in range(40):
            theirs.random()
        assert mine.random() == theirs.random(), strategy


def test_schedules_from_the_cache_are_checked_as_any_other():
    """1 and True are one key to a cache, but True is no number of seconds: each
    argument is refused at every call, after the plain numbers were cached; 1
    and 1.0 give the same values from it, as the formula does."""
    from backoff_iter.strategies import _planned

    _planned.cache_clear()
    for strategy in (exponential, full_jitter, equal_jitter):
        for base, cap, factor in [(1, 8, 2), (2, 8, 1), (1, 1, 1)]:
            made = take(strategy(base, cap=cap, factor=factor, **RNG[strategy]()), 6)
            floats = take(strategy(float(base), cap=float(cap), factor=float(factor),
                                   **RNG[strategy]()), 6)  # fmt: skip
            assert made == floats
            for name, value in (("base", base), ("cap", cap), ("factor", factor)):
                if value == 1:
                    arguments = {"base": base, "cap": cap, "factor": factor, name: True}
                    with pytest.raises(TypeError, match=name):
                        strategy(**arguments)


RNG = {  # each strategy's seeded rng, if it draws
    exponential: dict,
    full_jitter: lambda: {"rng": Random(3)},
    equal_jitter: lambda: {"rng": Random(3)},
}


def test_linear_checks_its_arguments_in_the_order_it_takes_them():
    """A bad step is named before a bad cap, as linear(base, step, cap=) takes them."""
    rejects(lambda: linear(1.0, -1, cap=-1.0), ValueError, "step")
    rejects(lambda: linear(1.0, "x", cap=math.nan), TypeError, "step")
    rejects(lambda: linear(1.0, cap=-1.0), ValueError, "cap")


@pytest.mark.parametrize("first", [0.0, -0.0])
def test_a_cap_of_negative_zero_gives_zeros_not_negative_zeros(first):
    """A cap of -0.0 is 0.0, whichever of the two a cache saw first."""
    from backoff_iter.strategies import _planned

    _planned.cache_clear()
    makers = [
        lambda cap: exponential(0.0, cap=cap),
        lambda cap: full_jitter(0.0, cap, rng=Random(1)),
        lambda cap: equal_jitter(0.0, cap, rng=Random(1)),
        lambda cap: fibonacci(0.0, cap=cap),
        lambda cap: linear(0.0, cap=cap),
        lambda cap: smooth_jitter(0.1, cap, rng=Random(1)),
        lambda cap: decorrelated(0.0, cap, rng=Random(1)),
        lambda cap: decorrelated(1, cap, rng=Random(1)),
        lambda cap: linear(0.0, 0.5, cap=cap),
    ]
    for make in makers:
        for cap in (first, -first):
            assert [math.copysign(1, v) for v in take(make(cap), 3)] == [1.0] * 3, (make, cap)


@pytest.mark.parametrize("base, cap", [(0.1, 30.0), (1, 8), (1e-300, 1e300), (1e-320, 1e300)])
def test_fibonacci_is_its_formula_however_its_delays_are_made(base, cap):
    """Few values below the cap (a cached tuple) or many (added up one by one,
    past the last float Fibonacci number for the tiniest base): made twice, the
    same values."""
    from backoff_iter.strategies import _fibonacci

    for _ in range(2):
        got = take(fibonacci(base, cap=cap), 1600)
        assert got[:70] == formulas.fibonacci(base, cap, 70)
        assert got == take(_fibonacci(base, cap), 1600)  # the generator, tested on its own


def test_default_factors_are_the_aws_ones():
    """full and equal jitter double by default; decorrelated triples."""
    assert take(full_jitter(1, rng=Random(1)), 9) == formulas.full_jitter(1, INF, 2, 9, Random(1))
    assert take(equal_jitter(1, rng=Random(1)), 9) == formulas.equal_jitter(1, INF, 2, 9, Random(1))
    assert take(decorrelated(1, rng=Random(1)), 9) == formulas.decorrelated(1, INF, 3, 9, Random(1))


# -- bounds, monotonicity, the cap ------------------------------------------


@given(bases, factors, caps)
def test_deterministic_strategies_never_decrease_and_never_pass_the_cap(base, factor, cap):
    """exponential, linear and fibonacci are non-decreasing and bounded by cap."""
    for values in (
        take(exponential(base, factor, cap=cap), 200),
        take(linear(base, cap=cap), 200),
        take(fibonacci(base, cap=cap), 200),
    ):
        assert all(a <= b for a, b in zip(values, values[1:]))
        assert all(0 <= v <= cap for v in values)


@given(positive_bases, caps, seeds)
def test_jitters_stay_inside_their_windows(base, cap, seed):
    """full in [0, t], equal in [t/2, t], decorrelated in [min(base, cap), cap], smooth in [0, cap]."""
    windows = formulas.exponential(base, 2.0, cap, 60)
    full = take(full_jitter(base, cap, rng=Random(seed)), 60)
    equal = take(equal_jitter(base, cap, rng=Random(seed)), 60)
    assert all(0 <= d <= t for d, t in zip(full, windows))
    assert all(t / 2 <= d <= t for d, t in zip(equal, windows))
    assert all(
        min(base, cap) <= d <= cap for d in take(decorrelated(base, cap, rng=Random(seed)), 60)
    )
    assert all(0 <= d <= cap for d in take(smooth_jitter(base, cap, rng=Random(seed)), 60))


def test_first_decorrelated_delay_lies_between_base_and_three_base():
    """With sleep starting at base, the first value is uniform in [base, 3·base]."""
    firsts = [next(decorrelated(2, rng=Random(seed))) for seed in range(2000)]
    assert all(2 <= d <= 6 for d in firsts)
    assert min(firsts) < 2.01 and max(firsts) > 5.99


def test_decorrelated_first_value_reaches_factor_times_base():
    """With factor=5 the first value is uniform in [base, 5·base], not [base, 3·base]."""
    firsts = [next(decorrelated(2, factor=5, rng=Random(seed))) for seed in range(2000)]
    assert all(2 <= d <= 10 for d in firsts)
    assert min(firsts) < 2.02 and max(firsts) > 9.98


@pytest.mark.parametrize(
    "strategy",
    [
        lambda: exponential(0.1, cap=30),
        lambda: linear(1, cap=30),
        lambda: fibonacci(1, cap=30),
        lambda: full_jitter(0.1, 30, rng=Random(0)),
        lambda: equal_jitter(0.1, 30, rng=Random(0)),
        lambda: smooth_jitter(0.1, 30, rng=Random(0)),
    ],
)
def test_growing_strategies_saturate_at_the_cap(strategy):
    """Far out, the deterministic ones are exactly the cap, jittered ones bounded by it."""
    far = take(islice(strategy(), 5000, None), 100)
    assert max(far) <= 30
    assert max(far) > 15


def test_deterministic_strategies_repeat_the_cap_exactly():
    """min(cap, ...) gives the cap itself, not a value near it."""
    for strategy in (exponential(0.1, cap=30), linear(1, cap=30), fibonacci(1, cap=30)):
        assert set(take(islice(strategy, 100, None), 100)) == {30.0}


def test_smooth_jitter_first_delay_has_median_near_base():
    """Polly's scaling puts the median first delay near base (g(0.5) / 1.4 ≈ 0.897·base)."""
    firsts = sorted(next(smooth_jitter(10, rng=Random(seed))) for seed in range(4001))
    assert firsts[2000] == pytest.approx(10 * formulas.smooth_g(0.5) / 1.4, rel=0.05)


# -- uniformity: each jitter draws uniformly over its window ----------------


def ks_distance_from_uniform(samples):
    """Kolmogorov-Smirnov distance of samples in [0, 1] from U(0, 1)."""
    xs = sorted(samples)
    n = len(xs)
    return max(max((i + 1) / n - x, x - i / n) for i, x in enumerate(xs))


# 1.95 / sqrt(n) is the 0.1% critical value: with a fixed seed the test is
# deterministic, and any formula error that shifts or bends the draw (a wrong
# window, a squared draw, a missing half) lands far above it.
N_SAMPLES = 4000
KS_LIMIT = 1.95 / math.sqrt(N_SAMPLES)


def test_the_ks_check_rejects_a_bent_draw():
    """The uniformity check itself fails for non-uniform samples (u**2, or a half window)."""
    rng = Random(0)
    uniform = [rng.random() for _ in range(N_SAMPLES)]
    assert ks_distance_from_uniform(uniform) < KS_LIMIT
    assert ks_distance_from_uniform([u * u for u in uniform]) > KS_LIMIT
    assert ks_distance_from_uniform([u / 2 for u in uniform]) > KS_LIMIT


def normalised(values, low_high):
    return [(d - low) / (high - low) for d, (low, high) in zip(values, low_high)]


def jitter_samples(strategy, window):
    """Normalised draws of 8 attempts (7 growing, 1 capped) from many seeds."""
    targets = formulas.exponential(0.5, 2.0, 40, 8)
    samples = []
    for seed in range(N_SAMPLES // 8):
        values = take(strategy(0.5, 40, rng=Random(seed)), 8)
        samples += normalised(values, [window(t) for t in targets])
    return samples


def test_full_jitter_is_uniform_over_zero_to_t():
    """(d / t) over the growing attempts and the cap is U(0, 1)."""
    samples = jitter_samples(full_jitter, lambda t: (0.0, t))
    assert ks_distance_from_uniform(samples) < KS_LIMIT


def test_equal_jitter_is_uniform_over_half_t_to_t():
    """(d - t/2) / (t/2) over the growing attempts and the cap is U(0, 1)."""
    samples = jitter_samples(equal_jitter, lambda t: (t / 2, t))
    assert ks_distance_from_uniform(samples) < KS_LIMIT


def test_decorrelated_is_uniform_between_base_and_three_times_the_last_sleep():
    """Without a cap, (d - base) / (3·prev - base) is U(0, 1) at every step."""
    samples = []
    for seed in range(N_SAMPLES // 8):
        values = take(decorrelated(1, rng=Random(seed)), 8)
        previous = [1.0, *values[:-1]]
        samples += normalised(values, [(1.0, 3 * p) for p in previous])
    assert ks_distance_from_uniform(samples) < KS_LIMIT


def inverse_g(target, low, high):
    """The t in [low, high] with g(t) = target (g is increasing), by bisection."""
    for _ in range(80):
        middle = (low + high) / 2
        if formulas.smooth_g(middle) < target:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def test_smooth_jitter_draws_t_uniformly_within_each_try():
    """Recovering t_i from the delays, t_i - i is U(0, 1) for every try i."""
    samples = []
    for seed in range(N_SAMPLES // 8):
        g = 0.0
        for i, delay in enumerate(take(smooth_jitter(1, rng=Random(seed)), 8)):
            g += delay * 1.4
            samples.append(inverse_g(g, i, i + 1) - i)
    assert ks_distance_from_uniform(samples) < KS_LIMIT


# -- randomness is injected and deterministic -------------------------------

JITTERS = [full_jitter, equal_jitter, decorrelated, smooth_jitter]


@pytest.mark.parametrize("strategy", JITTERS)
@given(seed=seeds)
def test_same_seed_gives_same_sequence(strategy, seed):
    """Two generators seeded alike yield identical delays; another seed differs."""
    first = take(strategy(1, 100, rng=Random(seed)), 20)
    assert first == take(strategy(1, 100, rng=Random(seed)), 20)
    assert first != take(strategy(1, 100, rng=Random(seed + 1)), 20)


@pytest.mark.parametrize("strategy", JITTERS)
def test_without_rng_the_module_random_is_used(strategy):
    """rng=None draws from random.random, so random.seed makes it repeatable."""
    state = random.getstate()
    try:
        random.seed(5)
        got = take(strategy(1, 100), 20)
    finally:
        random.setstate(state)
    assert got == take(strategy(1, 100, rng=Random(5)), 20)


class UniformOnly:
    """An rng-like object that offers only uniform(a, b)."""

    def __init__(self, seed):
        self._random = Random(seed)

    def uniform(self, a, b):
        return self._random.uniform(a, b)


@pytest.mark.parametrize("strategy", JITTERS)
def test_an_rng_with_only_uniform_works(strategy):
    """An object with uniform() but no random() gives the same values as Random."""
    assert take(strategy(1, 100, rng=UniformOnly(3)), 20) == take(
        strategy(1, 100, rng=Random(3)), 20
    )


@pytest.mark.parametrize("strategy", JITTERS)
def test_threads_iterating_their_own_generators_do_not_interfere(strategy):
    """Eight threads drawing 20,000 values each get what a lone thread gets."""
    results = {}

    def run(seed):
        results[seed] = take(strategy(0.01, 5, rng=Random(seed)), 20_000)

    threads = [threading.Thread(target=run, args=(seed,)) for seed in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for seed in range(8):
        assert results[seed] == take(strategy(0.01, 5, rng=Random(seed)), 20_000)


def test_threads_sharing_the_module_random_stay_in_bounds():
    """With the default rng, concurrent generators still give valid delays."""
    failures = []

    def run():
        values = take(full_jitter(0.01, 5), 20_000)
        if not all(0 <= v <= 5 for v in values):
            failures.append(values)

    in_threads(run)
    assert failures == []


# -- infinite means infinite -------------------------------------------------

UNCAPPED = [
    ("exponential", lambda: exponential(1)),
    ("exponential 1.0001", lambda: exponential(1, 1.0001)),
    ("exponential 10", lambda: exponential(1, 10)),
    ("exponential tiny base", lambda: exponential(1e-300, 2)),
    ("linear", lambda: linear(1)),
    ("fibonacci", lambda: fibonacci(1)),
    ("full_jitter", lambda: full_jitter(1, rng=Random(0))),
    ("full_jitter 10", lambda: full_jitter(1, factor=10, rng=Random(0))),
    ("equal_jitter 1.0001", lambda: equal_jitter(1, factor=1.0001, rng=Random(0))),
    ("decorrelated", lambda: decorrelated(1, rng=Random(0))),
    ("decorrelated 10", lambda: decorrelated(1, factor=10, rng=Random(0))),
    ("smooth_jitter", lambda: smooth_jitter(1, rng=Random(0))),
    ("smooth_jitter tiny base", lambda: smooth_jitter(1e-300, rng=Random(0))),
]


@pytest.mark.long_run
@pytest.mark.parametrize("name, strategy", UNCAPPED, ids=[n for n, _ in UNCAPPED])
def test_a_million_values_without_a_cap_never_overflow(name, strategy):
    """Uncapped, the 10**6-th value is a float (maybe inf), never an error or NaN."""
    values = strategy()
    head = take(values, 3000)  # past every overflow point (2**1024, F(1477))
    value = nth(values, 10**6)
    assert isinstance(value, float)
    assert not any(map(math.isnan, head)) and not math.isnan(value)
    assert value >= 0


def test_uncapped_values_that_outgrow_a_float_become_inf():
    """exponential and fibonacci reach inf and stay there, with no OverflowError."""
    assert nth(exponential(1), 1100) == INF
    assert nth(exponential(1e-300, 2), 3000) == INF
    assert nth(fibonacci(1), 2000) == INF


def test_exponential_keeps_the_formula_up_to_the_largest_float():
    """With a tiny base, values past 2**1023 still grow by the factor, finite until they overflow."""
    values = take(exponential(1e-300, 2), 2100)
    finite = [v for v in values if v < INF]
    assert all(b == a * 2 for a, b in zip(finite, finite[1:]))
    assert finite[-1] * 2 == INF and len(finite) > 1024


def test_smooth_jitter_stays_finite_for_any_try():
    """Past i = 1024, where 2**t overflows, smooth_jitter yields the largest float, not inf or NaN."""
    values = take(smooth_jitter(1e-300, rng=Random(2)), 5000)
    assert all(math.isfinite(v) for v in values)
    assert values[-1] == max(values)


@pytest.mark.long_run
def test_drawing_a_million_values_keeps_memory_flat():
    """Peak allocation while drawing 10**6 values stays small (no lists, no giant ints)."""
    for strategy in (
        exponential(1, 1.0001),
        decorrelated(1, rng=Random(0)),
        equal_jitter(1, 30, rng=Random(0)),
    ):
        tracemalloc.start()
        try:
            nth(strategy, 10**6)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 64 * 1024


# -- bad input fails at the call ---------------------------------------------

BAD = [
    (constant, {"delay": -1}, ValueError, "delay"),
    (constant, {"delay": math.nan}, ValueError, "delay"),
    (constant, {"delay": INF}, ValueError, "delay"),
    (constant, {"delay": True}, TypeError, "delay"),
    (linear, {"base": "1"}, TypeError, "base"),
    (linear, {"step": -0.5}, ValueError, "step"),
    (linear, {"cap": math.nan}, ValueError, "cap"),
    (exponential, {"base": -0.1}, ValueError, "base"),
    (exponential, {"factor": 0.5}, ValueError, "factor"),
    (exponential, {"factor": INF}, ValueError, "factor"),
    (exponential, {"cap": -1}, ValueError, "cap"),
    (exponential, {"factor": None}, TypeError, "factor"),
    (fibonacci, {"base": math.nan}, ValueError, "base"),
    (fibonacci, {"cap": False}, TypeError, "cap"),
    (full_jitter, {"factor": 0.99}, ValueError, "factor"),
    (full_jitter, {"rng": object()}, TypeError, "rng"),
    (equal_jitter, {"base": -2}, ValueError, "base"),
    (equal_jitter, {"factor": 0.0}, ValueError, "factor"),
    (decorrelated, {"factor": 1.0}, ValueError, "factor"),
    (decorrelated, {"factor": 0.5}, ValueError, "factor"),
    (decorrelated, {"cap": -3}, ValueError, "cap"),
    (smooth_jitter, {"base": math.nan}, ValueError, "base"),
    (smooth_jitter, {"rng": 42}, TypeError, "rng"),
]


@pytest.mark.parametrize(
    "strategy, kwargs, error, name",
    BAD,
    ids=[f"{i}-{s.__name__}-{name}" for i, (s, _, _, name) in enumerate(BAD)],  # no address
)
def test_bad_arguments_raise_at_the_call_naming_parameter_and_value(strategy, kwargs, error, name):
    """The call itself raises (no next() needed), naming the parameter and the value."""
    rejects(lambda: strategy(**kwargs), error, name, repr(kwargs[name]))


class Unreadable(Decimal):
    """A Decimal whose own float() breaks."""

    def __float__(self):
        raise LookupError("no float here")


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: exponential(Unreadable("0.5")), "base"),
        (lambda: linear(1.0, Unreadable("2")), "step"),
        (lambda: decorrelated(1.0, cap=Unreadable("9")), "cap"),
        (lambda: constant(Unreadable("1")), "delay"),
    ],
)
def test_a_number_whose_own_float_raises_is_refused_naming_the_parameter(call, name):
    """A real number whose float() raises is the caller's bad argument: a TypeError naming the
    parameter, the value and what broke (its error the cause), as the strategy is made."""
    rejects(call, TypeError, name, "Decimal(", "LookupError: no float here")
    with pytest.raises(TypeError) as raised:
        call()
    assert isinstance(raised.value.__cause__, LookupError)


def test_numbers_of_other_types_are_accepted_as_floats():
    """ints, Fractions and Decimals-like Reals work; the delays are floats."""
    from fractions import Fraction

    values = take(exponential(Fraction(1, 2), 2, cap=3), 4)
    assert values == [0.5, 1.0, 2.0, 3.0]
    assert all(type(v) is float for v in values)
    assert all(type(v) is float for v in take(linear(1, 2), 3))


# -- a hostile probe's edge cases ------------------------------------------------------


class ZeroRandom:
    """An rng whose every draw is exactly 0.0 (legal: random() is in [0, 1))."""

    def random(self):
        return 0.0


def test_decorrelated_at_an_infinite_sleep_and_a_draw_of_0_stays_at_the_cap():
    """decorrelated(1e308): 3e308 is inf, so the first sleep is inf; then a draw of 0 makes
    inf * 0 = NaN, which is not below the cap: the cap (inf), not NaN."""
    delays = take(decorrelated(1e308, cap=INF, rng=Draws(0.5, 0.0)), 2)
    assert delays == [INF, INF]


def test_smooth_jitter_repeats_a_cap_that_a_delay_just_equals():
    """Capped at exactly its fifth delay (8.952), smooth_jitter repeats the cap from there on,
    though the sixth delay would be below it (6.286)."""
    free = take(smooth_jitter(1, rng=Random(3)), 6)
    assert free[5] < free[4]
    assert take(smooth_jitter(1, cap=free[4], rng=Random(3)), 6) == free[:4] + [free[4]] * 2


@pytest.mark.parametrize(
    "base, cap", [(1.0, INF), (0.7, INF), (1e-300, INF), (5e-324, INF), (5e-324, 1e300)]
)
def test_fibonacci_multiplies_the_base_by_every_fibonacci_number_rounded_once(base, cap):
    """Each value is base·F(n) with the integer F(n) rounded to a float once, as the formula
    reads with Python's integers: not F(n) as a sum of rounded numbers (13 ulps off by
    F(1400)), nor the sum of the two values before it - past the last F(n) a float holds
    too, where a base below 1.38 goes on under the largest float (or the cap)."""
    values = take(fibonacci(base, cap=cap), 3100)
    assert values == formulas.fibonacci(base, cap, 3100)
    assert values[-1] == cap


def test_no_strategy_or_adaptor_ever_yields_nan():
    """Infinite delays meet draws of 0 and fractions of 1: never inf * 0 = NaN."""
    from backoff_iter import jittered

    cases = [
        nth(jittered(exponential(1), 0.1, rng=Random(1)), 1024),
        *jittered([INF], 0.5, rng=Random(1)),
        *jittered([INF, INF], 1.0, rng=ZeroRandom()),
        *jittered([INF], "full", rng=ZeroRandom()),
        *jittered([INF], "equal", rng=ZeroRandom()),
        nth(full_jitter(1, rng=ZeroRandom()), 1100),
        nth(equal_jitter(1, rng=ZeroRandom()), 1100),
        nth(full_jitter(1, rng=Random(3)), 1100),
        nth(equal_jitter(1, rng=Random(3)), 1100),
    ]
    assert not any(math.isnan(value) for value in cases)
    assert cases[:2] == [INF, INF]
    assert cases[2:6] == [0.0, 0.0, 0.0, INF]  # uniform(0, inf) at a draw of 0; inf/2 + ...


def test_fibonacci_with_a_tiny_base_keeps_adding_past_the_last_float_fibonacci():
    """fibonacci(5e-324) grows by the recurrence where F(n) outgrows a float, not a jump to inf."""
    values = take(fibonacci(5e-324), 1600)
    assert all(math.isfinite(v) for v in values)
    ratios = [b / a for a, b in zip(values[1400:], values[1401:])]
    assert all(1.61 < r < 1.62 for r in ratios)  # the golden ratio throughout


def test_fibonacci_checks_plain_floats_at_once_as_the_full_checks_would():
    """Every pair of awkward floats (zeros of either sign, inf, NaN, negatives, the
    largest and smallest) gives the values or the error that the full checks give."""
    from backoff_iter import _checks
    from backoff_iter.strategies import _fibonacci

    def checked(base, cap):  # the full checks, then what fibonacci makes of them
        base = _checks.seconds("base", base)
        cap = _checks.seconds("cap", cap, infinite=True)
        return (
            [min(base, cap)] * 5 if base == 0.0 or base >= cap else take(_fibonacci(base, cap), 5)
        )

    floats = [0.0, -0.0, 5e-324, 0.1, 30.0, 1.7e308, INF, -INF, math.nan, -1.0]
    for base in floats:
        for cap in floats:
            try:
                expected = checked(base, cap)
            except ValueError as error:
                with pytest.raises(type(error), match=str(error).split(",")[0]):
                    fibonacci(base, cap=cap)
                continue
            got = take(fibonacci(base, cap=cap), 5)
            assert got == expected, (base, cap)
            assert [math.copysign(1, v) for v in got] == [1.0] * 5, (base, cap)  # never -0.0


def test_smooth_jitter_with_a_tiny_base_grows_smoothly_past_two_to_the_1024():
    """smooth_jitter(1e-310) goes on doubling where 2**t overflows, not jumping to the largest float."""
    values = take(smooth_jitter(1e-310, rng=Random(2)), 1100)
    around = values[1015:1040]
    assert all(0 < v < 1e6 for v in around)
    assert max(around) / min(around) < 1e8  # about 2**25 at most over 25 tries


def test_negative_zero_is_zero():
    """constant(-0.0) and full_jitter(-0.0) yield 0.0, not -0.0."""
    assert math.copysign(1, next(constant(-0.0))) == 1.0
    assert all(math.copysign(1, v) == 1.0 for v in take(full_jitter(-0.0, rng=Random(1)), 3))


@pytest.mark.parametrize(
    "call, name, says",
    [
        (lambda: constant(10**400), "delay", "too large"),
        (lambda: exponential(1, 10**400), "factor", "too large"),
        (lambda: linear(1, cap=-(10**400)), "cap", "non-negative"),  # a cap may be endless
    ],
)
def test_huge_integers_name_their_parameter(call, name, says):
    """An integer beyond floats is a ValueError naming the parameter, never OverflowError."""
    rejects(call, ValueError, name, says)


def test_smooth_jitter_with_base_zero_is_zero_forever():
    """base 0 has nothing to spread: zeros, and no draws."""
    assert take(smooth_jitter(0, rng=ZeroRandom()), 4) == [0.0] * 4


@pytest.mark.parametrize("factor", [1.1, 1.5, 2.0, 3.0, 10.0])
def test_count_below_settles_the_boundary_both_ways(factor, monkeypatch):
    """_count_below is exact even when its logarithm guess is off by one either way."""
    from backoff_iter import strategies

    powers = strategies._finite_powers(factor)
    real_ceil = math.ceil
    for base, cap in [(0.1, 30.0), (1.0, 1024.0), (1e-3, 7.7), (2.0, 2.0 * factor**5)]:
        exact = sum(1 for n in range(powers) if base * factor**n < cap)
        for error in (-3, 3):
            monkeypatch.setattr(
                strategies.math, "ceil", lambda x, e=error, ceil=real_ceil: ceil(x) + e
            )
            assert strategies._count_below(base, factor, cap, powers) == exact
            monkeypatch.setattr(strategies.math, "ceil", real_ceil)


def test_every_strategy_is_in_the_registry_and_made_by_name():
    """STRATEGIES holds each public strategy; make() passes only the options it takes."""
    from backoff_iter import strategies

    assert set(strategies.STRATEGIES) == set(strategies.__all__)
    for name in strategies.STRATEGIES:
        assert take(strategies.make(name, base=1, cap=5, factor=2, step=1, rng=Random(1)), 3)
    rejects(lambda: strategies.make("nope"), ValueError, "strategy", "nope")
    rejects(lambda: strategies.make(["exponential"]), TypeError, "strategy", "['exponential']")


def test_make_takes_constants_delay_by_its_own_name_as_well_as_base():
    """make("constant", delay=5) is 5 s, as base=5 is: delay, constant's own
    parameter, was dropped among the options it ignores, for the default 1 s."""
    from backoff_iter import strategies

    assert take(strategies.make("constant", delay=5), 2) == [5.0, 5.0]
    assert take(strategies.make("constant", base=2, delay=5), 2) == [2.0, 2.0]  # base wins
    assert take(strategies.make("constant"), 1) == [1.0]


@pytest.mark.parametrize("strategy", [full_jitter, equal_jitter, decorrelated, smooth_jitter])
@pytest.mark.parametrize("base", [0.0, 1.0])
def test_an_rng_without_random_or_uniform_is_refused_when_the_strategy_is_made(strategy, base):
    """rng= is checked as the schedule is made, whatever its base: a base of 0, whose
    delays draw nothing, refuses a bad rng all the same."""
    rejects(lambda: strategy(base, 5.0, rng=object()), TypeError, "rng", "random()")


@pytest.mark.parametrize("base", [1e-300, 1e-310, 1e-320, 5e-324])
def test_smooth_jitter_with_a_tiny_base_is_the_formula_past_two_to_the_1024(base):
    """Past t = 1024, where 2**t outgrows a float, the values are still Polly's formula, within
    the roundings the float formula makes below it - for a subnormal base too (5e-324 has one
    significant bit: scaling g(t) by it lost the draw, values up to 2.6 times off)."""
    got = take(smooth_jitter(base, rng=Random(5)), 2200)
    expected = formulas.smooth_exact(base, 2200, Random(5))
    assert got == pytest.approx(expected, rel=1e-12, abs=1e-323)  # (two roundings among subnormals)
    assert got[-1] == sys.float_info.max


def test_smooth_jitter_with_a_huge_base_is_the_formula_where_its_product_outgrows_a_float():
    """(g(t) - g(t')) * base may pass the largest float where the delay, divided by 1.4, does
    not: smooth_jitter(1.5e308) with a draw of 0.5 waits 1.5e308·g(0.5)/1.4 ≈ 1.35e308 first."""
    first = next(smooth_jitter(1.5e308, rng=Draws(0.5)))
    assert first == pytest.approx(formulas.smooth_exact(1.5e308, 1, Draws(0.5))[0], rel=1e-15)
    assert first == pytest.approx(1.5e308 / 1.4 * formulas.smooth_g(0.5))


@pytest.mark.parametrize(
    "base, factor", [(5e-324, 1.5), (1e-300, 3.0), (5e-324, 10.0), (1e-310, 1e200), (1e-300, 2.0)]
)
def test_exponential_past_the_powers_a_float_holds_is_base_times_the_power_rounded_once(
    base, factor
):
    """Where factor**attempt outgrows a float but base * factor**attempt does not (a tiny
    base, no cap), each value is that product rounded once - not the value before it times
    the factor, rounded again at each step (20 ulps off by the end for a factor of 1.5)."""
    from backoff_iter.strategies import _finite_powers

    values = take(exponential(base, factor), 4000)
    powers = _finite_powers(factor)
    exact, power = [], Fraction(factor) ** powers
    for _ in range(powers, 4000):
        try:
            exact.append(float(Fraction(base) * power))
        except OverflowError:
            break
        power *= Fraction(factor)
    exact += [INF] * (4000 - powers - len(exact))
    assert values[:powers] == formulas.exponential(base, factor, INF, powers)
    assert values[powers:] == exact
    assert values[-1] == INF


def test_exponential_with_a_factor_near_1_does_not_drift_past_the_powers_a_float_holds():
    """exponential(5e-324, 1.01) takes 71,000 values to outgrow factor**attempt and as many
    again to reach the largest float: the last ones are base * 1.01**attempt rounded once, not
    drifted by 70,000 multiplications."""
    from backoff_iter.strategies import _finite_powers

    powers = _finite_powers(1.01)
    values = take(exponential(5e-324, 1.01), 2 * powers)
    base, factor = Decimal.from_float(5e-324), Decimal.from_float(1.01)  # exactly
    with localcontext() as digits:
        digits.prec = 60
        for attempt in (powers - 1, powers, powers + 30_000, 2 * powers - 5_000):
            assert values[attempt] == float(base * factor**attempt), attempt


def test_exponential_past_the_powers_a_float_holds_draws_in_integers_not_decimals(monkeypatch):
    """A value past factor**attempt's last float costs a few integer operations: decimal
    arithmetic and a decimal's conversion to a float took 3 us a value there, 15 times one
    below (exponential(1e-308, 1.0001, cap=1e308) from its 7,100,000th value on); the values
    are the product rounded once all the same."""
    import decimal

    from backoff_iter.strategies import _finite_powers

    def no_decimals(*args, **kwargs):
        raise AssertionError("decimal arithmetic per value")

    monkeypatch.setattr(decimal, "Context", no_decimals)
    monkeypatch.setattr(decimal, "Decimal", no_decimals)
    powers = _finite_powers(2.0)
    values = take(exponential(1e-300, 2.0), 2000)
    assert values[powers] == float(Fraction(1e-300) * 2**powers)
    assert values[1999] == float(Fraction(1e-300) * 2**1999) < INF


def test_exponential_with_a_large_factor_and_a_tiny_base_does_not_jump_to_the_cap():
    """exponential(1e-300, 20) has 237 powers of 20 a float holds, and values below the
    largest float up to attempt 467: they are all there, not inf (or the cap) from 237 on."""
    values = take(exponential(1e-300, 20), 470)
    assert values[236] < values[237] < values[467] < INF == values[468]
    assert values[300] == float(Fraction(1e-300) * 20**300)
    capped = take(exponential(1e-300, 20, cap=1e300), 470)
    assert capped == [min(1e300, v) for v in values]
    windows = take(full_jitter(1e-300, factor=20, rng=Draws(*[0.5] * 470)), 470)
    assert windows == [v * 0.5 for v in values]


def test_decorrelated_falls_below_a_cap_near_the_largest_float():
    """With a cap above the largest float / (2·factor), sleep * factor outgrows a float where
    the delay need not: decorrelated(1e307, cap=1e308) at 8.9e307 draws from uniform(1e307,
    2.7e308) - 3.6e307 for a draw of 0.1, not the cap - and from the cap it falls below it
    again, as the formula does, instead of staying there forever."""
    draws = (0.99, 0.99, 0.1, 0.99, 0.99, 0.2, 0.0)
    got = take(decorrelated(1e307, cap=1e308, rng=Draws(*draws)), len(draws))
    base, cap = Fraction(1e307), Fraction(1e308)
    sleep, expected = base, []
    for u in draws:  # the formula in exact fractions, each value rounded to a float
        sleep = Fraction(float(min(cap, base + (sleep * 3 - base) * Fraction(u))))
        expected.append(float(sleep))
    assert got == pytest.approx(expected, rel=1e-15)
    assert got[3] == got[4] == 1e308 > got[5] and got[-1] == 1e307
    values = take(decorrelated(1e307, cap=1e308, rng=Random(4)), 300)
    assert values.count(1e308) > 50 and sum(v < 1e308 for v in values[-100:]) > 20


def test_decorrelated_without_a_cap_is_inf_only_beyond_floats():
    """Uncapped, a sleep of 1e308 times 3 is no float, but uniform(5e307, 3e308) mostly is:
    a draw of 0.1 gives 7.5e307, not inf; a value beyond floats is inf, and inf stays inf
    (a draw of 0 included: no NaN)."""
    got = take(decorrelated(5e307, rng=Draws(0.5, 0.1, 0.9, 0.0)), 4)
    assert got[0] == 5e307 + (5e307 * 3 - 5e307) * 0.5
    assert got[1] == pytest.approx(7.5e307, rel=1e-15)
    assert got[2:] == [INF, INF]


def test_decorrelated_climbs_to_a_cap_near_the_largest_float_and_back_to_a_subnormal_base():
    """From 5e-324 up to a cap of 1e308 and, for a draw of 0, back down to the base: near the
    largest float the values go by halves, below it by the formula as it reads (halving
    5e-324 would lose it, and a draw of 0.5 would then give 5e-324, not 1e-323)."""
    climb = [1 - 2**-53] * 1400
    got = take(decorrelated(5e-324, cap=1e308, rng=Draws(*climb, 0.0, 0.5)), 1402)
    assert got[1399] == 1e308 and got[1400:] == [5e-324, 1e-323]
