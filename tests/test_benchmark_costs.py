"""benchmarks/costs.py and threads.py: the rows of issue 28's targets, their verdicts,
and benchmarks that measure the installed package (no timing is asserted)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"


@pytest.fixture(scope="module")
def costs():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import costs
    finally:
        sys.path.remove(str(BENCHMARKS))
    return costs


def test_no_benchmark_puts_the_checkout_on_sys_path():
    """Every module of benchmarks/ imports the installed backoff_iter: none edits sys.path."""
    for path in BENCHMARKS.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "path":
                value = node.value
                assert not (isinstance(value, ast.Name) and value.id == "sys"), path.name


@pytest.mark.parametrize(
    ("kind", "most", "ours", "theirs", "met", "within"),
    [
        ("x", 2.0, 200.0, 100.0, True, True),
        ("x", 2.0, 201.0, 100.0, False, True),
        ("x", 2.0, 251.0, 100.0, False, False),
        ("+", 300.0, 1300.0, 1000.0, True, True),
        ("+", 300.0, 1301.0, 1000.0, False, True),
        ("+", 300.0, 1376.0, 1000.0, False, False),
        (">=", 1.0, 0.5, 0.5, True, True),
        (">=", 1.0, 0.45, 0.5, False, True),
        (">=", 1.0, 0.39, 0.5, False, False),
        ("count", 0, 0, 0, True, True),
        ("count", 0, 1, 0, False, False),
    ],
)
def test_a_row_is_met_or_within_its_slack_by_the_kind_of_its_target(
    costs, kind, most, ours, theirs, met, within
):
    """A ratio at most, an extra at most, a ratio at least, a count: met, and within 1.25x."""
    row = costs.Row("path", "reference", ours, theirs, kind, most)
    assert row.met is met
    assert row.within(1.25) is within


def test_a_rows_figure_says_what_its_target_measures(costs):
    """An extra prints its nanoseconds and ratio, a ratio its ratio, a detail after it."""
    assert costs.Row("p", "r", 1500.0, 1000.0, "+", 300).measured == "+500 ns (1.50x)"
    assert costs.Row("p", "r", 300.0, 100.0, "x", 4).measured == "3.00x"
    assert costs.Row("p", "r", 3.0, 1.0, "x", 4, detail="at 8").measured == "3.00x (at 8)"
    assert costs.Row("p", "r", 0, 0, "count", 0).target == "<= 0"


def test_a_missed_row_says_where_the_time_goes(costs):
    """where() names backoff_iter's own functions from a profile, with their shares."""
    from itertools import islice

    import backoff_iter

    found = costs.where(lambda: [list(islice(backoff_iter.linear(0.1), 3)) for _ in range(200)])
    assert "strategies.py:linear" in found
    assert "%" in found


def test_every_target_of_the_issue_has_a_row(costs):
    """The paths of the issue's table (but the simulator's), by the rows the code makes."""
    source = (BENCHMARKS / "costs.py").read_text(encoding="utf-8")
    source += (BENCHMARKS / "threads.py").read_text(encoding="utf-8")
    for path in (
        "retrying(factory, budget=TokenBucket()) success",
        "retrying(factory) success",
        "module-level policy success",
        "aretrying(factory) success",
        "module-level async policy success",
        "per retry",
        "breaker= success",
        "throttle= success",
        "rate_limiter= (CUBIC) success",
        "all three success",
        "on_result= success",
        "a no-op observe= hook, success",
        "per success",
        "2-8 threads",
        "first RetryQuota decision in a process",
        "import backoff_iter.cli",
        "RetryBudget success",
        "RetryQuota failure + decision",
        "make + 10 values",
    ):
        assert path in source, path


def test_a_floor_is_shown_beside_the_figure_and_a_target_below_it_says_so(costs):
    """A row's floor (the least its path can cost in Python) follows its figure, in the
    figure's own unit; a missed target below it is out of reach, one above it is not."""
    extra = costs.Row("p", "r", 1500.0, 1000.0, "+", 300, floor=350.0, floor_what="the work")
    assert extra.measured == "+500 ns (1.50x) (floor +350 ns: the work)"
    assert extra.beyond_reach and extra.verdict == "MISSED, target below its floor"
    ratio = costs.Row("p", "r", 400.0, 100.0, "x", 2, detail="d", floor=1.87, floor_what="w")
    assert ratio.measured == "4.00x (d; floor 1.87x: w)"
    assert not ratio.beyond_reach and ratio.verdict == "MISSED"
    assert costs.Row("p", "r", 150.0, 100.0, "x", 2, floor=3.0).verdict == "met"


@pytest.fixture(scope="module")
def floors(costs):
    import floors  # (costs put benchmarks/ on the path as it imported)

    return floors


def test_the_floor_loops_retry_as_a_loop_does(floors):
    """The floor's loops give up to RETRIES retries of OSError, then let the failure
    through; any other error at once, as the forms they stand beside do."""
    import asyncio

    from drivers import RETRIES, Flaky

    assert floors.loop(Flaky(RETRIES))() == 1
    with pytest.raises(OSError):
        floors.loop(Flaky(RETRIES + 1))()
    with pytest.raises(KeyError):
        floors.loop(lambda: {}["missing"])()

    async def both():
        flaky = Flaky(RETRIES)
        failing = Flaky(RETRIES + 1)

        async def ok():
            return flaky()

        async def failed():
            return failing()

        return await floors.aloop(ok)(), await floors.aloop(failed)()

    with pytest.raises(OSError):
        asyncio.run(both())
    assert asyncio.run(floors.aloop(_async(Flaky(2)))()) == 1


def _async(function):
    async def call():
        return function()

    return call


def test_the_floor_of_a_hook_tells_each_retry_and_the_success(floors):
    """told() makes the events a driver would (kind, number, elapsed); without a hook, none."""
    from drivers import Flaky

    heard = []
    assert floors.told(Flaky(2), heard.append)() == 1
    assert [(event.kind, event.number) for event in heard] == [
        ("retry", 1),
        ("retry", 2),
        ("success", 3),
    ]
    assert all(event.elapsed >= 0.0 for event in heard)
    assert floors.told(Flaky(2), None)() == 1
