"""python -m backoff_iter, end to end in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from itertools import islice
from random import Random

import pytest

from backoff_iter import decorrelated
from backoff_iter.planning import plan
from backoff_iter.simulation import simulate


def cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "backoff_iter", *args], capture_output=True, text=True, timeout=120
    )


def test_show_prints_attempt_sleep_and_elapsed_to_three_decimals():
    """The issue's example: exponential base 1 factor 1.1, 49 sleeps, ends at 97.017 and 1057.190."""
    result = cli("show", "exponential", "--base", "1", "--factor", "1.1", "-n", "49")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["attempt", "sleep", "elapsed"]
    assert len(lines) == 1 + 49
    assert lines[-1].split() == ["48", "97.017", "1057.190"]


def test_show_json_rows_are_the_librarys_values():
    """--json gives attempt, sleep and elapsed as the strategy and a running sum give them."""
    result = cli("show", "decorrelated", "--base", "1", "--cap", "30", "--seed", "4", "-n", "6", "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    sleeps = list(islice(decorrelated(1, 30, rng=Random(4)), 6))
    assert [row["sleep"] for row in rows] == sleeps
    assert [row["attempt"] for row in rows] == list(range(6))
    running = 0.0
    for row, sleep in zip(rows, sleeps):
        running += sleep
        assert row["elapsed"] == running


@pytest.mark.parametrize(
    "strategy", ["constant", "linear", "fibonacci", "full_jitter", "equal_jitter", "smooth_jitter"]
)
def test_show_works_for_every_strategy(strategy):
    """Each strategy of the library can be shown with its defaults."""
    result = cli("show", strategy, "-n", "3", "--json")
    assert result.returncode == 0, result.stderr
    assert len(json.loads(result.stdout)) == 3


def test_plan_reports_the_count_and_the_sleeps_around_it():
    """plan prints the retry count at T and the sleeps before and after; --json matches planning.plan."""
    text = cli("plan", "--base", "1", "--factor", "2", "--elapsed", "20")
    assert text.returncode == 0, text.stderr
    assert "retries:      4" in text.stdout
    assert "sleep before: 8.000" in text.stdout and "sleep after:  16.000" in text.stdout
    data = json.loads(cli("plan", "--base", "1", "--factor", "2", "--elapsed", "20", "--json").stdout)
    assert {k: data[k] for k in plan(1, 2, 20)._fields} == plan(1, 2, 20)._asdict()


def test_plan_ratio_solves_the_factor_and_compare_gives_both_counts():
    """--ratio 0.1 means factor 1.1; --compare adds the other factor's count and log ratio."""
    data = json.loads(
        cli("plan", "--base", "1", "--ratio", "0.1", "--elapsed", "1057.19", "--compare", "2", "--json").stdout
    )
    assert data["factor"] == 1.1 and data["retries"] == 49
    assert data["compare"]["retries"] == plan(1, 2, 1057.19).retries
    assert data["compare"]["ratio"] == pytest.approx(0.1375, abs=1e-4)  # log 1.1 / log 2


def test_simulate_json_matches_the_python_api_and_shows_progress():
    """--json rows carry strategy, clients, work and time: the same as simulate() with that seed."""
    result = cli("simulate", "--strategies", "none,full_jitter", "--clients", "3,6", "--runs", "4",
                 "--seed", "9", "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    expected = simulate(["none", "full_jitter"], clients=[3, 6], runs=4, seed=9)
    assert rows == [r._asdict() for r in expected]
    assert set(rows[0]) == {"strategy", "clients", "work", "time"}
    assert "simulate: done in" in result.stderr


def test_simulate_prints_a_table_per_strategy():
    """Without --json there is one table per strategy, a row per client count."""
    result = cli("simulate", "--strategies", "exponential,decorrelated", "--clients", "2,4",
                 "--runs", "2", "--seed", "1")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "exponential" in lines and "decorrelated" in lines
    assert sum(1 for line in lines if line.split()[:1] in (["2"], ["4"])) == 4


def test_simulate_plot_writes_a_png(tmp_path):
    """--plot draws the two charts into a PNG file."""
    target = tmp_path / "study.png"
    result = cli("simulate", "--clients", "2,4", "--runs", "2", "--seed", "1", "--plot", str(target))
    assert result.returncode == 0, result.stderr
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "args",
    [
        ["show", "nope"],
        ["show", "exponential", "--base", "-1"],
        ["show", "exponential", "--factor", "0.5"],
        ["show", "fibonacci", "--factor", "2"],
        ["show", "exponential", "-n", "0"],
        ["plan", "--base", "1", "--factor", "2"],
        ["plan", "--base", "-1", "--factor", "2", "--elapsed", "3"],
        ["plan", "--base", "1", "--ratio", "-1", "--elapsed", "3"],
        ["simulate", "--strategies", "nope"],
        ["simulate", "--clients", "0"],
        ["simulate", "--runs", "-3"],
        ["simulate", "--cap", "-1"],
        [],
    ],
)
def test_bad_input_is_one_line_and_exit_status_2(args):
    """Unknown names, non-positive counts and negative parameters: one error line, status 2, no traceback."""
    result = cli(*args)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "error:" in result.stderr
