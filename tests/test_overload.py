"""The overload simulator's invariants, and the storm and cure it must show (not tuned figures)."""

from __future__ import annotations

import pytest
from checks import rejects
from hypothesis import given, settings
from hypothesis import strategies as st

from backoff_iter.overload import BUDGETS, simulate_overload

small = {"rate": 50.0, "capacity": 60.0, "seconds": 30.0, "spike_at": 5.0, "spike_for": 5.0}


@settings(max_examples=30)
@given(
    strategy=st.sampled_from(["none", "exponential", "full_jitter", "decorrelated", "constant"]),
    budget=st.sampled_from(sorted(BUDGETS)),
    retries=st.integers(min_value=0, max_value=5),
    error_rate=st.sampled_from([0.0, 0.05, 0.5]),
    spike=st.sampled_from([1.0, 3.0]),
    seed=st.integers(min_value=0, max_value=1000),
)
def test_every_request_ends_and_attempts_are_bounded(
    strategy, budget, retries, error_rate, spike, seed
):
    """Each request succeeds or fails (the model checks it), attempts <= requests x (1 + retries)."""
    [run] = simulate_overload(
        [strategy],
        [budget],
        retries=retries,
        error_rate=error_rate,
        spike=spike,
        seed=seed,
        **small,
    )
    assert run.requests == sum(run.series["arrivals"])
    assert (
        run.requests <= run.attempts <= run.requests * (1 + (0 if strategy == "none" else retries))
    )
    assert 0.0 <= run.succeeded <= 1.0
    assert run.amplification == run.attempts / run.requests
    assert sum(run.series["attempts"]) <= run.attempts
    assert all(len(values) == 30 for values in run.series.values())


def test_seeded_runs_repeat_exactly_and_seeds_matter():
    """Same seed, same runs; another seed, other runs."""
    first = simulate_overload(["full_jitter"], ["token_bucket"], seed=3, **small)
    assert first == simulate_overload(["full_jitter"], ["token_bucket"], seed=3, **small)
    assert first != simulate_overload(["full_jitter"], ["token_bucket"], seed=4, **small)


def test_pairs_come_in_order_each_with_its_own_stream():
    """Every strategy x budget pair is run; asking for one pair gives the same figures."""
    runs = simulate_overload(["none", "full_jitter"], ["none", "retry_budget"], seed=5, **small)
    assert [(r.strategy, r.budget) for r in runs] == [
        ("none", "none"),
        ("none", "retry_budget"),
        ("full_jitter", "none"),
        ("full_jitter", "retry_budget"),
    ]
    assert runs[3] == simulate_overload(["full_jitter"], ["retry_budget"], seed=5, **small)[0]


def test_without_overload_nothing_fails_but_transient_errors():
    """A server with room to spare and no errors: every request succeeds at once."""
    [run] = simulate_overload(
        ["full_jitter"], ["none"], rate=50, capacity=1000, error_rate=0, spike=1, seconds=40, seed=1
    )
    assert run.succeeded == 1.0 and run.attempts == run.requests
    assert run.recovery_seconds == 0.0 and run.goodput_last_20s > 0.95


def test_the_defaults_show_the_storm_and_its_cure():
    """Retries without a budget never recover from the spike; the token bucket does."""
    runs = {
        (r.strategy, r.budget): r
        for r in simulate_overload(["none", "full_jitter"], ["none", "token_bucket"], seed=2026)
    }
    storm = runs["full_jitter", "none"]
    assert storm.recovery_seconds is None and storm.goodput_last_20s < 0.05
    assert storm.amplification > 3.0  # near 1 + retries
    cured = runs["full_jitter", "token_bucket"]
    assert cured.recovery_seconds is not None and cured.goodput_last_20s > 0.95
    assert runs["none", "none"].recovery_seconds is not None


def test_retries_save_the_transient_errors_that_no_retry_loses():
    """Without a spike, 'none' loses about error_rate of the requests; retrying with a bucket loses none."""
    runs = {
        r.strategy: r
        for r in simulate_overload(
            ["none", "full_jitter"], ["token_bucket"], spike=1, seconds=30, seed=7
        )
    }
    assert runs["none"].succeeded < 0.995
    assert runs["full_jitter"].succeeded > 0.9999


def test_a_ratio_budget_recovers_only_with_headroom():
    """(1 + 0.2) x 700 leaves room below 1000 and recovers; (1 + 0.2) x 900 does not."""
    [roomy] = simulate_overload(["full_jitter"], ["retry_budget"], rate=700, seed=11)
    [tight] = simulate_overload(["full_jitter"], ["retry_budget"], rate=900, seed=11)
    assert roomy.recovery_seconds is not None
    assert tight.recovery_seconds is None


def test_progress_reports_shares_up_to_one():
    """progress(strategy, budget, share) rises to 1.0 for each run."""
    seen = []
    simulate_overload(["none"], ["none"], seed=1, progress=lambda *a: seen.append(a), **small)
    shares = [share for _, _, share in seen]
    assert shares == sorted(shares) and shares[-1] == 1.0 and len(shares) > 5


@pytest.mark.parametrize(
    "options, error, word",
    [
        ({"strategies": ["bogus"]}, ValueError, "strategies"),
        ({"budgets": ["infinite"]}, ValueError, "budgets"),
        ({"budgets": []}, ValueError, "budgets"),
        ({"rate": 0}, ValueError, "rate"),
        ({"capacity": -5}, ValueError, "capacity"),
        ({"spike": 0.5}, ValueError, "spike"),
        ({"timeout": 0}, ValueError, "timeout"),
        ({"error_rate": 1.0}, ValueError, "error_rate"),
        ({"retries": 2.5}, TypeError, "retries"),
        ({"seconds": "60"}, TypeError, "seconds"),
        ({"progress": 3}, TypeError, "progress"),
    ],
)
def test_bad_arguments_name_the_parameter(options, error, word):
    """Out-of-range rates, spikes and unknown names are rejected before any run."""
    rejects(lambda: simulate_overload(**options), error, word)
