"""The overload simulator: its invariants, the storm and the cures it must show, the
fleet table at a small scale, the parts, the bounds (claims, not tuned figures)."""

from __future__ import annotations

import json
import math
import random
import sys
import warnings

import pytest
from checks import rejects
from hypothesis import given, settings
from hypothesis import strategies as st

from backoff_iter import CircuitBreaker
from backoff_iter.cli import main
from backoff_iter.overload import (
    BUDGETS,
    MAX_ATTEMPTS,
    MAX_CLIENTS,
    MAX_SECONDS,
    PARTS,
    simulate_overload,
)

small = {"rate": 50.0, "capacity": 60.0, "seconds": 30.0, "spike_at": 5.0, "spike_for": 5.0}
# The fleet table's storm, scaled down: 50 requests a second to a server of 60.
storm = {"rate": 50.0, "capacity": 60.0, "seconds": 60.0, "spike_at": 5.0, "spike_for": 5.0}
# A total outage at a steady 50 requests a second: every attempt fails at once.
outage = {"rate": 50.0, "capacity": 60.0, "seconds": 60.0, "spike": 1.0, "error_rate": 1.0}
# A server that answers nothing in time (the timeout, 1 µs, is shorter than any service):
# every attempt times out, the storm's sign of overload, a throttle to the limiter.
stalled = {**outage, "error_rate": 0.0, "timeout": 1e-6}

REFUSING = ("sre_throttle", "breaker")  # parts that refuse attempts before they are sent
COMBINATIONS = [
    "none",
    *BUDGETS,
    *PARTS,
    "breaker+token_bucket",
    "cubic+retry_budget",
    "retry_quota+sre_throttle",
    "token_bucket+cubic+sre_throttle+breaker",
]


def uses(kind, parts):
    return any(part in kind.split("+") for part in parts)


@pytest.mark.long_run
@settings(max_examples=40)
@given(
    strategy=st.sampled_from(["none", "exponential", "full_jitter", "decorrelated", "constant"]),
    budget=st.sampled_from(COMBINATIONS),
    clients=st.sampled_from([1, 3]),
    scope=st.sampled_from(["process", "fleet"]),
    server=st.sampled_from(["serve-all", "drop-expired"]),
    retries=st.integers(min_value=0, max_value=5),
    error_rate=st.sampled_from([0.0, 0.05, 0.5, 1.0]),
    spike=st.sampled_from([1.0, 3.0]),
    seed=st.integers(min_value=0, max_value=1000),
)
def test_every_request_ends_and_attempts_are_bounded(
    strategy, budget, clients, scope, server, retries, error_rate, spike, seed
):
    """Each request succeeds, fails or is unfinished at the run's end (the model checks
    they add up); attempts <= requests x (1 + retries), and >= requests unless a throttle
    or breaker refuses some or a limiter holds some past the end; the totals are the
    series' sums (nothing after the end counts)."""
    [run] = simulate_overload(
        [strategy],
        [budget],
        retries=retries,
        error_rate=error_rate,
        spike=spike,
        clients=clients,
        budget_scope=scope,
        server=server,
        seed=seed,
        **small,
    )
    assert (run.clients, run.budget_scope, run.server) == (clients, scope, server)
    assert run.requests == sum(run.series["arrivals"]) > 0
    assert run.attempts <= run.requests * (1 + (0 if strategy == "none" else retries))
    assert run.attempts >= run.requests or uses(budget, (*REFUSING, "cubic"))
    assert 0.0 <= run.succeeded <= 1.0
    assert run.succeeded == 0.0 or error_rate < 1.0
    assert run.amplification == run.attempts / run.requests
    assert sum(run.series["attempts"]) == run.attempts
    assert sum(run.series["goodput"]) / run.requests == run.succeeded
    assert all(len(values) == 30 for values in run.series.values())


@settings(max_examples=15)
@given(
    budget=st.sampled_from(COMBINATIONS),
    server=st.sampled_from(["serve-all", "drop-expired"]),
    error_rate=st.sampled_from([0.01, 0.5]),
    seed=st.integers(min_value=0, max_value=1000),
)
def test_the_simulated_clock_never_goes_back(budget, server, error_rate, seed):
    """Every outcome and attempt is handled in time order: a part's clock reads never decrease."""
    readings = []

    def breaker(clock, rng):
        def watched():
            readings.append(clock())
            return readings[-1]

        return CircuitBreaker(clock=watched)

    kind = "breaker" if budget == "none" else "+".join(sorted({*budget.split("+"), "breaker"}))
    with pytest.MonkeyPatch.context() as patch:  # undone after each example, not each test
        patch.setitem(PARTS, "breaker", ("breaker", breaker))
        simulate_overload(
            ["full_jitter"], [kind], server=server, error_rate=error_rate, seed=seed, **small
        )
    assert len(readings) > 1 and readings == sorted(readings)


def test_seeded_runs_repeat_exactly_and_seeds_matter():
    """Same seed, same runs (a fleet of clients too); another seed, other runs."""
    options = {"clients": 5, "budget_scope": "fleet", **small}
    first = simulate_overload(["full_jitter"], ["token_bucket+breaker"], seed=3, **options)
    assert first == simulate_overload(["full_jitter"], ["token_bucket+breaker"], seed=3, **options)
    assert first != simulate_overload(["full_jitter"], ["token_bucket+breaker"], seed=4, **options)


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


def test_a_quiet_second_is_no_failure_to_recover():
    """At 2 requests a second some seconds see none (and no success): a healthy run
    whose first window after the spike holds such a second still recovers at once."""
    start = 20  # the spike's end, spike or not

    def healthy(seed):
        [run] = simulate_overload(
            ["none"], ["none"], rate=2, capacity=1000, error_rate=0, spike=1, seconds=60, seed=seed
        )
        return run

    # The first seed whose window [20, 25) has both a quiet second and an arrival.
    run = next(
        run
        for run in map(healthy, range(100))
        if 0 in run.series["arrivals"][start : start + 5]
        and any(run.series["arrivals"][start : start + 5])
    )
    assert run.succeeded == 1.0
    assert run.recovery_seconds == 0.0


def test_an_answer_exactly_at_the_timeout_is_in_time():
    """Serving takes exactly the timeout (capacity 2/s, timeout 0.5 s): a request that
    finds the server idle is answered at its deadline, which is in time."""
    [run] = simulate_overload(
        ["none"],
        ["none"],
        rate=0.01,
        capacity=2,
        timeout=0.5,
        error_rate=0,
        spike=1,
        seconds=2000,
        seed=1,
    )
    assert run.requests > 10 and run.succeeded > 0.9  # most find the server idle


def test_a_last_part_second_counts_only_what_happens_before_the_run_ends():
    """seconds=10.5 ends in a backlog (the spike lasts to the end, no timeout cuts it): the
    server serves 60 a second, so the last half second's goodput is at most 31, set against
    its half second of arrivals - not the whole second's 60 that the backlog's drain adds.
    Counted at once (a client with nothing to tell) or told to a token bucket alike."""
    options = {**small, "seconds": 10.5, "spike_for": 10.0, "timeout": 100.0, "error_rate": 0.0}
    for run in simulate_overload(["none"], ["none", "token_bucket"], seed=1, **options):
        assert len(run.series["goodput"]) == 11
        assert 25 <= run.series["goodput"][-1] <= 31, (run.budget, run.series["goodput"])
        assert run.series["attempts"] == run.series["arrivals"]  # no retry: sent on arrival


@pytest.mark.parametrize(
    "options, budget",
    [
        ({"retries": 150, "base": 0.001, "cap": 0.001}, "none"),
        ({"base": 4000.0, "cap": 8000.0}, "none"),
        ({"base": 4000.0, "cap": 8000.0}, "token_bucket"),
    ],
)
def test_clients_are_never_warned_of_an_endless_schedule(options, budget):
    """A client's delays stop after --retries and nobody waits them out: 150 retries or a
    delay of 4000 s (drawn, though its retry would come after the run) warn nothing (the
    core's warning would tell the user to bound them)."""
    outage = {"rate": 1.0, "seconds": 5.0, "spike": 1.0, "error_rate": 1.0, "seed": 1}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        [run] = simulate_overload(["exponential"], [budget], **outage, **options)
    assert run.requests > 0
    if "retries" in options:  # every retry made within 0.15 s, but the last second's
        assert run.attempts <= run.requests * 151
        assert run.attempts >= sum(run.series["arrivals"][:-1]) * 151
    else:  # each retry after 4000 s, after the run's end: its delay drawn, never waited
        assert run.attempts == run.requests


def test_a_run_without_requests_has_no_figures():
    """No request arrives: no recovery (not "0 s"), no amplification, no share."""
    [run] = simulate_overload(["full_jitter"], ["token_bucket"], rate=1e-300, seed=1)
    assert run.requests == 0 == run.attempts
    assert run.recovery_seconds is None
    assert run.amplification is None and run.succeeded is None and run.goodput_last_20s is None


def test_a_spike_ending_past_floats_is_a_run_without_recovery_not_an_overflow(capsys):
    """spike_at and spike_for finite, their sum inf: the run is made and reports no
    recovery (it raised OverflowError, from the command line a traceback); the command
    line refuses it, a spike after any run, naming --seconds (it printed "never")."""
    [run] = simulate_overload(
        ["none"], ["none"], rate=10, seconds=5, spike=2, spike_at=1e308, spike_for=1e308, seed=1
    )
    assert run.requests > 0 and run.recovery_seconds is None
    spike = ["--spike-at", "1e308", "--spike-for", "1e308", "--seconds", "5", "--rate", "10"]
    assert main(["overload", *spike, "--strategies", "none", "--budgets", "none", "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "error: --seconds: the spike ends past any run" in err
    assert "Traceback" not in err


def test_a_run_without_a_spike_recovers_from_its_start():
    """spike 1 (or spike_for 0): no spike to wait for, so recovery is measured from the
    run's start - a healthy 8 s run recovered at once; it said never (from the spike's
    defaults' end, 20 s or 10 s, after the run)."""
    light = {"rate": 50.0, "capacity": 1000.0, "seconds": 8.0, "error_rate": 0.0, "seed": 1}
    for shape in ({"spike": 1.0}, {"spike_for": 0.0}):
        [run] = simulate_overload(["none"], ["none"], **light, **shape)
        assert run.succeeded == 1.0 and run.recovery_seconds == 0.0, shape


def test_a_total_outage_fails_every_request_after_every_retry():
    """error_rate 1: nothing succeeds, and without a budget each request makes 1 + retries
    attempts (all within 0.35 s: all of them, but for the last second's requests)."""
    [run] = simulate_overload(["full_jitter"], ["none"], retries=3, seed=1, **outage)
    assert run.succeeded == 0.0 and not any(run.series["goodput"])
    assert 4 * sum(run.series["arrivals"][:-1]) <= run.attempts <= 4 * run.requests
    assert run.recovery_seconds is None


@pytest.mark.long_run
def test_the_defaults_show_the_storm_and_its_cure():
    """Retries without a budget never recover from the spike; the token bucket does."""
    runs = {
        (r.strategy, r.budget): r
        for r in simulate_overload(["none", "full_jitter"], ["none", "token_bucket"], seed=2026)
    }
    storm_run = runs["full_jitter", "none"]
    assert storm_run.recovery_seconds is None and storm_run.goodput_last_20s < 0.05
    assert storm_run.amplification > 3.0  # near 1 + retries
    cured = runs["full_jitter", "token_bucket"]
    assert cured.recovery_seconds is not None and cured.goodput_last_20s > 0.95
    assert runs["none", "none"].recovery_seconds is not None


def test_retries_save_the_transient_errors_that_no_retry_loses():
    """Without a spike, 'none' loses about error_rate of the requests; retrying with a
    bucket (told of every success, so it stays full) loses none (but a few the run's end
    leaves unfinished)."""
    runs = {
        r.strategy: r
        for r in simulate_overload(
            ["none", "full_jitter"], ["token_bucket"], spike=1, seconds=30, seed=7
        )
    }
    assert runs["none"].succeeded < 0.995
    assert runs["full_jitter"].succeeded > 0.999


@pytest.mark.long_run
def test_a_ratio_budget_recovers_only_with_headroom():
    """(1 + 0.2) x 700 leaves room below 1000 and recovers; (1 + 0.2) x 900 does not."""
    [roomy] = simulate_overload(["full_jitter"], ["retry_budget"], rate=700, seed=11)
    [tight] = simulate_overload(["full_jitter"], ["retry_budget"], rate=900, seed=11)
    assert roomy.recovery_seconds is not None
    assert tight.recovery_seconds is None


# -- the fleet ----------------------------------------------------------------------------


@pytest.mark.long_run
def test_per_process_reserves_retry_a_total_outage_fully_and_a_fleet_budget_does_not():
    """500 clients at 0.1 request/s each, every call failing: each client's own reserve
    (10/s) covers all its retries, so each request (but the last second's, cut by the
    run's end) makes 1 + retries attempts; one fleet budget
    keeps retries within ratio x calls plus one reserve over the run and a window."""
    ratio, reserve, window, retries = 0.2, 10.0, 10.0, 3
    runs = {
        scope: simulate_overload(
            ["full_jitter"],
            ["retry_budget"],
            clients=500,
            budget_scope=scope,
            sync_interval=0.0,
            retries=retries,
            seed=1,
            **outage,
        )[0]
        for scope in ("process", "fleet")
    }
    each = runs["process"]
    assert (1 + retries) * sum(each.series["arrivals"][:-1]) <= each.attempts
    assert each.attempts <= (1 + retries) * each.requests
    fleet = runs["fleet"]
    span = outage["seconds"] + retries * 0.05 * 2**retries  # the last retries come a little later
    allowed = ratio * fleet.requests + reserve * (span + window)
    assert 0 < fleet.attempts - fleet.requests <= allowed < 0.5 * retries * fleet.requests


def test_the_fleet_table_at_a_small_scale():
    """Token buckets in the storm: one client recovers; 500 with a bucket each amplify
    more and never recover (each bucket sees too few failures to stop); 500 sharing one
    recover.  A server dropping expired work lets the 500 buckets recover too."""

    def run(clients, scope, server="serve-all"):
        [result] = simulate_overload(
            ["full_jitter"],
            ["token_bucket"],
            clients=clients,
            budget_scope=scope,
            server=server,
            seed=7,
            **storm,
        )
        return result

    one, each, shared = run(1, "process"), run(500, "process"), run(500, "fleet")
    assert one.recovery_seconds is not None and shared.recovery_seconds is not None
    assert each.recovery_seconds is None
    assert each.amplification > max(one.amplification, shared.amplification) + 0.1
    dropping = run(500, "process", "drop-expired")
    assert dropping.recovery_seconds is not None


def test_a_dropping_server_keeps_answering_some_requests_in_time_under_steady_overload():
    """Twice its capacity, no retries: serving everyone, the queue outgrows the timeout and no
    answer comes in time; dropping what waited a whole timeout, the queue stays within one."""
    late = {
        server: simulate_overload(
            ["none"],
            ["none"],
            rate=100.0,
            capacity=50.0,
            spike=1.0,
            error_rate=0.0,
            seconds=30.0,
            server=server,
            seed=1,
        )[0].goodput_last_20s
        for server in ("serve-all", "drop-expired")
    }
    assert late["serve-all"] == 0.0
    assert late["drop-expired"] > 0.05


@pytest.mark.long_run
def test_a_dropping_server_lets_a_ratio_budget_recover_where_serving_all_does_not():
    """One ratio budget: the wasted work of gone clients keeps the storm going; drop it and
    it ends, but no server saves 50 clients each with its own reserve."""
    runs = {
        (server, scope): simulate_overload(
            ["full_jitter"],
            ["retry_budget"],
            clients=50,
            budget_scope=scope,
            server=server,
            seed=7,
            **storm,
        )[0]
        for server in ("serve-all", "drop-expired")
        for scope in ("process", "fleet")
    }
    assert runs["serve-all", "fleet"].recovery_seconds is None
    assert runs["drop-expired", "fleet"].recovery_seconds is not None
    assert runs["drop-expired", "process"].recovery_seconds is None


@pytest.mark.long_run
def test_a_fleet_budgets_lag_changes_what_it_admits_but_never_to_per_process_levels():
    """The sync interval reaches the shared store: each lag admits its own retries in a
    total outage, every one of them far fewer than 500 budgets of their own."""
    retries = {}
    for scope, sync_interval in (("fleet", 0.0), ("fleet", 1.0), ("process", 0.0)):
        [run] = simulate_overload(
            ["full_jitter"],
            ["retry_budget"],
            clients=500,
            budget_scope=scope,
            sync_interval=sync_interval,
            seed=1,
            **outage,
        )
        retries[scope, sync_interval] = run.attempts - run.requests
    assert retries["fleet", 0.0] != retries["fleet", 1.0]
    assert max(retries["fleet", 0.0], retries["fleet", 1.0]) < retries["process", 0.0] / 4


@pytest.mark.parametrize(("budgets", "seed"), [("none", 0), ("token_bucket", 2)])
def test_a_retry_after_a_timeout_waits_for_the_timeout_then_its_delay(budgets, seed):
    """One request to a server too slow for every attempt (2 s each, timeout 1 s): its
    attempts are 1 s + 2 s apart (the timeout, then the constant delay), with a quiet
    client (decided at once) as with one whose budget hears each outcome.  (The seeds are
    ones whose run has a single arrival.)"""
    [run] = simulate_overload(
        ["constant"], [budgets], rate=0.05, capacity=0.5, seconds=40, spike=1.0, base=2.0, seed=seed
    )
    [arrived] = [
        second for second, count in enumerate(run.series["arrivals"]) for _ in range(count)
    ]
    sent = [second for second, count in enumerate(run.series["attempts"]) for _ in range(count)]
    assert sent == [arrived, arrived + 3, arrived + 6, arrived + 9]
    assert run.succeeded == 0.0


def test_each_client_has_its_own_breaker():
    """500 clients at 0.1 request/s never reach a breaker's minimum throughput (100 calls in
    30 s): in a total outage every request is sent; one client's breaker opens at once."""
    alone, many = (
        simulate_overload(["none"], ["breaker"], clients=clients, seed=2, **outage)[0]
        for clients in (1, 500)
    )
    assert many.attempts == many.requests
    assert alone.attempts < alone.requests / 10


# -- the parts ----------------------------------------------------------------------------


def test_a_breaker_in_a_total_outage_sends_what_its_defaults_allow():
    """It opens at the 100th failure, then lets one probe through per 5 s break."""
    [run] = simulate_overload(["full_jitter"], ["breaker"], seed=1, **outage)
    minimum_throughput, break_duration = 100, 5.0
    assert (
        minimum_throughput
        < run.attempts
        <= (minimum_throughput + outage["seconds"] / break_duration + 1)
    )
    assert run.succeeded == 0.0


def test_the_sre_throttle_rejects_as_its_formula_says():
    """With no accepts (every attempt times out), the n-th request goes with probability
    1 / (n + 1): about the harmonic number H(requests) are sent in all (the window, 120 s,
    holds the whole run)."""
    [run] = simulate_overload(["none"], ["sre_throttle"], seed=1, **stalled)
    expected = sum(1 / (n + 1) for n in range(run.requests))
    assert abs(run.attempts - expected) <= 4 * math.sqrt(expected)


def test_the_rate_limiter_holds_attempts_at_the_client():
    """Every timeout is a throttle: the limiter slows the client to its floor, so by the
    run's end it has sent only a few of its requests' attempts (the rest wait for it,
    unfinished, neither failed nor succeeded); without it every request makes 1 + retries."""
    limited, free = simulate_overload(
        ["full_jitter"], ["cubic", "none"], retries=3, seed=1, **stalled
    )
    assert limited.attempts < limited.requests / 10
    assert free.attempts >= 4 * sum(free.series["arrivals"][:-1])
    assert limited.succeeded == free.succeeded == 0.0


def test_what_is_under_way_at_the_end_is_neither_a_success_nor_an_attempt_of_the_run():
    """A limiter's backlog when the run ends: its requests are unfinished, not successes
    of the run (they were counted as such, 100% succeeded where the series showed 45%),
    and their attempts after the end are not the run's: each total is its series' sum."""
    late_spike = {**small, "spike": 3.0, "spike_at": 20.0, "spike_for": 10.0, "seed": 1}
    for run in simulate_overload(["none", "full_jitter"], ["cubic", "token_bucket"], **late_spike):
        assert run.attempts == sum(run.series["attempts"]), run.budget
        assert run.succeeded == sum(run.series["goodput"]) / run.requests, run.budget
        if run.budget == "cubic":  # its backlog: about half the requests wait at the end
            assert run.succeeded < 0.6


@pytest.mark.parametrize("seed", [1, 2])
def test_transient_errors_are_no_throttle_to_a_limiter_or_a_throttle(seed):
    """A light load (50/s to a server of 1000/s) with transient errors only: the CUBIC
    limiter never slows (goodput keeps up with the arrivals: recovered at once, ~100% in
    the last 20 s) and the SRE throttle refuses almost nothing, though errors are 1%, or 50%."""
    light = {"rate": 50.0, "capacity": 1000.0, "seconds": 60.0, "spike": 1.0, "seed": seed}
    [limited] = simulate_overload(["full_jitter"], ["cubic"], error_rate=0.01, **light)
    assert limited.recovery_seconds == 0.0
    assert limited.goodput_last_20s >= 0.99
    [throttled] = simulate_overload(["none"], ["sre_throttle"], error_rate=0.5, **light)
    assert throttled.requests - throttled.attempts <= 2  # refused: a first request's chance


@pytest.mark.parametrize("scope, quotas", [("process", 2), ("fleet", 1)])
def test_a_quota_takes_botocores_14_for_a_timeouts_retry_though_it_is_a_throttle(scope, quotas):
    """Timeouts are throttles to the limiter and the throttle, but botocore names none a
    throttle: with nothing succeeding, a quota of 500 pays for 35 retries at 14 (not 100 at
    a throttle's 5), one quota per client of two, or one the two share."""
    [run] = simulate_overload(
        ["full_jitter"], ["retry_quota"], budget_scope=scope, clients=2, seed=1, **stalled
    )
    assert run.attempts - run.requests == quotas * (500 // 14)


def test_combinations_run_in_any_order_and_bad_ones_are_refused():
    """A budget and parts joined by + run whatever the order; two budgets, a part
    twice, none with a part or an unknown name are argument errors naming budgets."""
    runs = simulate_overload(
        ["full_jitter"], ["breaker+token_bucket", "token_bucket+breaker"], seed=1, **small
    )
    assert [r.budget for r in runs] == ["breaker+token_bucket", "token_bucket+breaker"]
    for bad in ("breaker+breaker", "token_bucket+retry_quota", "none+breaker", "breaker+", "gold"):
        rejects(lambda bad=bad: simulate_overload(budgets=[bad]), ValueError, "budgets")


# -- bounds and bad arguments -------------------------------------------------------------


class Started(Exception):
    """A run that passed the checks began: stop it there."""


def started(*_):
    raise Started


@pytest.mark.parametrize(
    "strategies, retries, factor", [(["full_jitter"], 3, 4), (["none"], 3, 1), (["none"], 0, 1)]
)
def test_the_work_bound_is_the_expected_requests_times_one_plus_retries(
    strategies, retries, factor
):
    """Expected attempts = rate x (seconds + (spike - 1) x the spike's length) x (1 +
    retries, if any strategy retries): MAX_ATTEMPTS exactly runs, a bit more is refused."""
    rate, seconds, spike_at, spike_for = 1.0, 100.0, 50.0, 50.0
    # the spike that brings the expected attempts to the bound exactly
    spike = 1 + (MAX_ATTEMPTS / factor / rate - seconds) / spike_for
    options = {"rate": rate, "seconds": seconds, "spike_at": spike_at, "spike_for": spike_for}
    with pytest.raises(Started):
        simulate_overload(
            strategies, ["none"], spike=spike, retries=retries, progress=started, **options
        )
    rejects(  # (a run that starts instead stops at once: Started is no ValueError)
        lambda: simulate_overload(
            strategies, ["none"], spike=spike * 1.001, retries=retries, progress=started, **options
        ),
        ValueError,
        "spike",  # the factor raised furthest above its default
        f"{MAX_ATTEMPTS:,}",
    )


@pytest.mark.parametrize(
    "options, named",
    [
        ({"rate": 1e6}, "rate"),
        ({"seconds": 86_400}, "seconds"),
        ({"spike": 1e308}, "spike"),
        ({"rate": 1, "retries": MAX_ATTEMPTS - 1}, "retries"),
        ({"rate": 50_000, "retries": 300}, "retries"),  # 62.5x the rate, 75.25x 1 + retries
        ({"rate": 50_000, "retries": 200}, "rate"),  # 62.5x the rate, 50.25x 1 + retries
        ({"rate": 50_000, "retries": 250}, "retries"),  # 62.5x the rate, 62.75x 1 + retries
        ({"rate": 80_000, "spike": 1000, "spike_for": 0}, "rate"),  # a spike of no time adds 0
        ({"rate": 800, "spike": 20_000, "spike_for": 120}, "spike"),  # 20,000x the requests
        # a rate whose requests, the default spike added, overflow a float: the rate (the
        # spike's factor was taken as inf / rate x seconds)
        ({"rate": 1.4e306}, "rate"),
    ],
)
def test_a_run_expecting_too_many_attempts_names_what_was_raised_furthest(options, named):
    """Too many expected attempts: the error names the factor furthest above its default (as
    a ratio; 1 + retries for the retries) - what the user most likely raised, and what the
    command line's message names (--retries, not --rate, for --rate 1 --retries 4999999)."""
    rejects(
        lambda: simulate_overload(["full_jitter"], ["none"], progress=started, **options),
        ValueError,
        named,
        f"{MAX_ATTEMPTS:,}",
    )
    if options == {"rate": 1.4e306}:  # (beyond floats: no "inf" attempts)
        rejects(
            lambda: simulate_overload(["full_jitter"], ["none"], progress=started, **options),
            ValueError,
            "rate",
            "got more than a float holds",
        )
    # No strategy retries: the retries are no factor, however many.
    rejects(
        lambda: simulate_overload(["none"], ["none"], rate=1e6, retries=10**6, progress=started),
        ValueError,
        "rate",
    )


def test_the_arrivals_are_those_of_random_expovariate():
    """The storm draws each gap between arrivals as random.expovariate does, inline: a
    seeded run's arrivals, second by second, are those of rng.expovariate's gaps (after
    the two phases of no length, each drawing a gap past its end at once, and with each
    arrival's attempt drawing whether it fails)."""
    rate, seconds = 50.0, 30.0
    [run] = simulate_overload(
        ["none"], ["none"], rate=rate, spike=1, spike_at=0, spike_for=0, seconds=seconds, seed=3
    )
    rng = random.Random("3/none/none")
    rng.expovariate(rate), rng.expovariate(rate)  # the phases before the spike, and of it
    expected = [0] * int(seconds)
    now = rng.expovariate(rate)
    while now < seconds:
        expected[int(now)] += 1
        now += rng.expovariate(rate)
        rng.random()  # the arrival's attempt: a transient error or not
    assert run.series["arrivals"] == expected and run.requests == sum(expected) > 1000


def test_progress_is_told_at_the_first_arrival_then_every_hundredth_of_the_run():
    """progress(strategy, budget, share): first at the first arrival, then at the first
    arrival a hundredth of the run (at least a second) after the last report, and 1.0 at
    the end: about a hundred calls for a run of 200.5 s, not one per arrival."""
    told = []
    simulate_overload(
        ["full_jitter"], ["token_bucket"], rate=50, capacity=60, seconds=200.5, seed=1,
        progress=lambda *call: told.append(call),
    )  # fmt: skip
    assert {(strategy, budget) for strategy, budget, _ in told} == {("full_jitter", "token_bucket")}
    shares = [share for _, _, share in told]
    assert 0 < shares[0] < 0.001 and shares[-1] == 1.0  # 50 arrivals a second
    assert all(0.01 <= later - earlier < 0.011 for earlier, later in zip(shares, shares[1:-1]))
    assert 95 <= len(shares) <= 101


def test_one_request_may_make_no_more_attempts_than_a_run_may_expect():
    """A rate expecting almost no request does not let retries past the bound: the one
    request that comes would make 1 + retries attempts (hours of them at 10**9), so
    retries of MAX_ATTEMPTS are refused naming retries; one fewer runs, and a run of no
    strategy that retries takes any."""
    rare = {"rate": 1e-9, "progress": started}
    rejects(
        lambda: simulate_overload(["full_jitter"], ["none"], retries=MAX_ATTEMPTS, **rare),
        ValueError,
        "retries",
        f"{MAX_ATTEMPTS - 1:,}",
    )
    for strategies, retries in ((["full_jitter"], MAX_ATTEMPTS - 1), (["none"], 10**9)):
        with pytest.raises(Started):
            simulate_overload(strategies, ["none"], retries=retries, **rare)


@pytest.mark.parametrize(
    "options, error, word",
    [
        ({"strategies": ["bogus"]}, ValueError, "strategies"),
        ({"strategies": []}, ValueError, "strategies"),
        ({"budgets": ["infinite"]}, ValueError, "budgets"),
        ({"budgets": []}, ValueError, "budgets"),
        ({"rate": 0}, ValueError, "rate"),
        ({"rate": 1e12}, ValueError, "rate"),
        ({"rate": 1e300, "spike": 1e300}, ValueError, "spike"),  # (the further above its default)
        ({"capacity": -5}, ValueError, "capacity"),
        ({"spike": 0.5}, ValueError, "spike"),
        ({"spike": math.inf}, ValueError, "spike"),
        ({"timeout": 0}, ValueError, "timeout"),
        ({"error_rate": 1.01}, ValueError, "error_rate"),
        ({"error_rate": -0.1}, ValueError, "error_rate"),
        ({"retries": 2.5}, TypeError, "retries"),
        ({"seconds": "60"}, TypeError, "seconds"),
        ({"seconds": MAX_SECONDS * 1.01}, ValueError, "seconds"),
        ({"clients": 0}, ValueError, "clients"),
        ({"clients": MAX_CLIENTS + 1}, ValueError, "clients"),
        ({"clients": 2.0}, TypeError, "clients"),
        ({"budget_scope": "world"}, ValueError, "budget_scope"),
        ({"sync_interval": -1}, ValueError, "sync_interval"),
        ({"sync_interval": 3601}, ValueError, "sync_interval"),
        ({"server": "serve-some"}, ValueError, "server"),
        ({"progress": 3}, TypeError, "progress"),
        ({"strategies": "full_jitter"}, TypeError, "strategies"),
        ({"strategies": 5}, TypeError, "strategies"),
        ({"strategies": [["none"]]}, ValueError, "strategies"),
        ({"budgets": "none"}, TypeError, "budgets"),
        ({"budgets": 5}, TypeError, "budgets"),
        ({"budgets": [5]}, ValueError, "budgets"),
        ({"budgets": [None]}, ValueError, "budgets"),
        ({"retries": 10**400}, ValueError, "retries"),
        ({"seed": 1.5}, TypeError, "seed"),
        ({"seed": "7"}, TypeError, "seed"),
        ({"seed": False}, TypeError, "seed"),
    ],
)
def test_bad_arguments_name_the_parameter(options, error, word):
    """Out-of-range values, unknown names and runs too long are rejected before any run."""
    options = {"progress": started, **options}  # a run that starts stops at once
    rejects(lambda: simulate_overload(**options), error, word)


@pytest.mark.parametrize("parameter", ["strategies", "budgets"])
def test_one_name_given_as_a_string_is_no_list_of_letters(parameter):
    """strategies="full_jitter" (or budgets="none") is refused as a string, not run, nor
    refused for its first letter, nor with a word about seconds."""
    given = {"strategies": "full_jitter", "budgets": "none"}[parameter]
    call = lambda: simulate_overload(**{parameter: given}, progress=started)
    rejects(call, TypeError, parameter, "list of names", repr(given))


@pytest.mark.skipif(not hasattr(sys, "get_int_max_str_digits"), reason="3.11+: str() has a limit")
def test_a_seed_of_more_digits_than_str_converts_is_refused_naming_it():
    """The seed's digits name each pair's stream: past str()'s limit, an error naming seed,
    not the interpreter's ValueError naming nothing."""
    seed = 10 ** sys.get_int_max_str_digits()
    rejects(lambda: simulate_overload(seed=seed, progress=started), ValueError, "seed", "digits")


def test_the_bounds_stand_at_their_limits():
    """The most clients and seconds allowed are accepted (the run starts)."""
    for options in ({"clients": MAX_CLIENTS}, {"seconds": MAX_SECONDS, "rate": 1.0}):
        with pytest.raises(Started):
            simulate_overload(["none"], ["none"], progress=started, **options)


# -- the command line ---------------------------------------------------------------------

SMALL = ["--rate", "50", "--capacity", "60", "--seconds", "30", "--spike-at", "5"]


def test_each_part_runs_from_the_command_line_and_is_reported_in_json(capsys):
    """Every budget, part and a combination: one run each, named as typed, with the
    clients, scope and server of the command."""
    names = [*BUDGETS, *PARTS, "cubic+retry_budget"]
    command = ["overload", "--strategies", "full_jitter", "--budgets", ",".join(names), *SMALL]
    options = ["--clients", "3", "--budget-scope", "fleet", "--server", "drop-expired"]
    status = main([*command, *options, "--seed", "1", "--json"])
    runs = json.loads(capsys.readouterr().out)
    assert status == 0
    assert [run["budget"] for run in runs] == names
    assert {(r["clients"], r["budget_scope"], r["server"]) for r in runs} == {
        (3, "fleet", "drop-expired")
    }
    assert all(run["requests"] > 0 for run in runs)


@pytest.mark.parametrize(
    "args, option",
    [
        (["--rate", "1e12"], "--rate"),
        (["--seconds", "1e6"], "--seconds"),
        (["--clients", "100001"], "--clients"),
        (["--clients", "0"], "--clients"),
        (["--budget-scope", "world"], "--budget-scope"),
        (["--sync-interval", "-1"], "--sync-interval"),
        (["--server", "all"], "--server"),
        (["--error-rate", "1.5"], "--error-rate"),
        (["--budgets", "breaker+breaker"], "--budgets"),
    ],
)
def test_bounds_and_bad_options_exit_2_naming_the_option(capsys, args, option):
    """Each refused option is bad usage: status 2, one error line naming the option."""
    status = main(["overload", *args])
    error = capsys.readouterr().err.strip()
    assert status == 2
    assert len(error.splitlines()) == 1 and option in error


def test_a_run_without_requests_is_null_in_json(capsys):
    """--json: recovery, amplification and the shares are null (None), not 0, without requests."""
    args = ["overload", "--rate", "1e-300", "--budgets", "breaker+token_bucket", "--json"]
    assert main(args) == 0
    for run in json.loads(capsys.readouterr().out):
        assert run["requests"] == 0
        assert run["recovery_seconds"] is run["amplification"] is run["succeeded"] is None


def test_a_run_without_requests_prints_never_and_dashes(capsys):
    """The table says "never" and "-" where there is nothing to count, not 0 s or 0%."""
    assert main(["overload", "--rate", "1e-300", "--strategies", "none", "--budgets", "none"]) == 0
    row = capsys.readouterr().out.splitlines()[1].split()
    assert row == ["none", "none", "0", "0", "-", "-", "-", "never"]
