"""python -m backoff_iter, end to end in subprocesses: output, exits, strict JSON, pictures."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from itertools import islice
from random import Random

import pytest

from backoff_iter import decorrelated
from backoff_iter.overload import simulate_overload
from backoff_iter.planning import plan
from backoff_iter.simulation import simulate

COMMAND = [sys.executable, "-m", "backoff_iter"]


def cli(*args, timeout=120):
    return subprocess.run([*COMMAND, *args], capture_output=True, text=True, timeout=timeout)


def strict_json(text):
    """json.loads that rejects Infinity and NaN, as JavaScript's JSON.parse does."""

    def reject(constant):
        raise AssertionError(f"not RFC 8259 JSON: {constant}")

    return json.loads(text, parse_constant=reject)


# -- show -------------------------------------------------------------------------


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
    result = cli(
        "show", "decorrelated", "--base", "1", "--cap", "30", "--seed", "4", "-n", "6", "--json"
    )
    assert result.returncode == 0, result.stderr
    rows = strict_json(result.stdout)
    sleeps = list(islice(decorrelated(1, 30, rng=Random(4)), 6))
    assert [row["sleep"] for row in rows] == sleeps
    assert [row["attempt"] for row in rows] == list(range(6))
    running = 0.0
    for row, sleep in zip(rows, sleeps):
        running += sleep
        assert row["elapsed"] == running


def test_show_json_writes_infinity_as_null():
    """Once values overflow, the JSON says null (as JavaScript does), never a bare Infinity."""
    result = cli("show", "exponential", "-n", "1030", "--json")
    rows = strict_json(result.stdout)
    assert rows[1023]["sleep"] == 2.0**1023 and rows[1023]["elapsed"] is None
    assert rows[-1] == {"attempt": 1029, "sleep": None, "elapsed": None}


@pytest.mark.parametrize(
    "strategy", ["constant", "linear", "fibonacci", "full_jitter", "equal_jitter", "smooth_jitter"]
)
def test_show_works_for_every_strategy(strategy):
    """Each strategy of the library can be shown with its defaults."""
    result = cli("show", strategy, "-n", "3", "--json")
    assert result.returncode == 0, result.stderr
    assert len(strict_json(result.stdout)) == 3


def test_show_until_elapsed_stops_once_the_time_slept_reaches_it():
    """Without -n, --until-elapsed 20 ends at the row whose running total first reaches 20."""
    rows = strict_json(cli("show", "exponential", "--until-elapsed", "20", "--json").stdout)
    assert [row["elapsed"] for row in rows] == [1.0, 3.0, 7.0, 15.0, 31.0]
    rows = strict_json(cli("show", "exponential", "--until-elapsed", "15", "--json").stdout)
    assert rows[-1]["elapsed"] == 15.0


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads memory from /proc")
def test_show_streams_a_hundred_million_rows_at_once_in_flat_memory():
    """The first row of -n 100000000 arrives within a second, and memory does not grow."""
    started = time.monotonic()
    process = subprocess.Popen(
        [*COMMAND, "show", "exponential", "-n", "100000000"], stdout=subprocess.PIPE, text=True
    )
    try:
        process.stdout.readline()
        first = process.stdout.readline()
        assert first.split()[:2] == ["0", "1.000"]
        assert time.monotonic() - started < 1.0 + STARTUP
        for _ in range(20_000):
            process.stdout.readline()
        early = rss_kb(process.pid)
        for _ in range(400_000):
            process.stdout.readline()
        assert rss_kb(process.pid) - early < 2_000  # kB: nothing accumulates
    finally:
        process.kill()
        process.wait()


# The interpreter's own start, which the "within a second" does not count.
STARTUP = 0.5


def test_a_closed_pipe_ends_quietly():
    """`| head -1`: no BrokenPipeError traceback, status 0."""
    result = subprocess.run(
        f"{sys.executable} -m backoff_iter show exponential -n 10000000 | head -1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=60,
        executable="/bin/bash",
    )
    assert result.stdout.split() == ["attempt", "sleep", "elapsed"]
    assert result.stderr == ""


def test_show_plot_checks_the_path_first_and_draws_a_png(tmp_path):
    """A bad --plot path fails at once with status 2; a good one gets a PNG."""
    for bad in (str(tmp_path / "chart.jpg"), str(tmp_path / "missing" / "chart.png")):
        result = cli("show", "full_jitter", "--plot", bad)
        assert result.returncode == 2 and "--plot" in result.stderr
    target = tmp_path / "jitter.png"
    result = cli(
        "show",
        "decorrelated",
        "--base",
        "1",
        "--cap",
        "30",
        "--seed",
        "1",
        "-n",
        "12",
        "--samples",
        "200",
        "--plot",
        str(target),
    )
    assert result.returncode == 0, result.stderr
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# -- plan ---------------------------------------------------------------------------


def test_plan_reports_the_count_and_the_sleeps_around_it():
    """plan prints the count at T and the sleeps before and after; --json keeps the inputs by name."""
    text = cli("plan", "--base", "1", "--factor", "2", "--elapsed", "20")
    assert text.returncode == 0, text.stderr
    assert "retries:      4" in text.stdout
    assert "sleep before: 8.000" in text.stdout and "sleep after:  16.000" in text.stdout
    data = strict_json(
        cli("plan", "--base", "1", "--factor", "2", "--elapsed", "20", "--json").stdout
    )
    expected = plan(1, 2, 20)
    assert data["elapsed"] == 20.0  # the input, not the time slept
    assert data["slept"] == expected.elapsed == 15.0
    assert (data["retries"], data["exact"], data["sleep_before"], data["sleep_after"]) == (
        expected.retries,
        expected.exact,
        expected.sleep_before,
        expected.sleep_after,
    )


def test_plan_ratio_solves_the_factor_and_compare_gives_both_counts():
    """--ratio 0.1 means factor 1.1; --compare adds the other factor's count and log ratio."""
    data = strict_json(
        cli(
            "plan",
            "--base",
            "1",
            "--ratio",
            "0.1",
            "--elapsed",
            "1057.19",
            "--compare",
            "2",
            "--json",
        ).stdout
    )
    assert data["factor"] == 1.1 and data["ratio"] == 0.1 and data["retries"] == 49
    assert data["compare"]["retries"] == plan(1, 2, 1057.19).retries
    assert data["compare"]["ratio"] == pytest.approx(0.1375, abs=1e-4)  # log 1.1 / log 2


def test_plan_with_factor_one_returns_at_once():
    """Factor 1 is linear, solved in closed form: no loop that float rounding could stall."""
    result = cli("plan", "--base", "1", "--factor", "1", "--elapsed", "1e300", "--json", timeout=20)
    assert result.returncode == 0, result.stderr
    assert strict_json(result.stdout)["slept"] == 1e300


# -- simulate ---------------------------------------------------------------------------


def test_simulate_json_matches_the_python_api_and_shows_progress():
    """--json rows carry strategy, clients, work and time: the same as simulate() with that seed."""
    result = cli(
        "simulate",
        "--strategies",
        "none,full_jitter",
        "--clients",
        "3,6",
        "--runs",
        "4",
        "--seed",
        "9",
        "--json",
        "--jobs",
        "1",
    )
    assert result.returncode == 0, result.stderr
    rows = strict_json(result.stdout)
    expected = simulate(["none", "full_jitter"], clients=[3, 6], runs=4, seed=9)
    assert rows == [r._asdict() for r in expected]
    assert set(rows[0]) == {"strategy", "clients", "work", "time"}
    assert result.stderr.splitlines()[-1].startswith("simulate: done in")


def test_simulate_gives_the_same_figures_on_one_or_two_processes():
    """--jobs 1 and --jobs 2 print identical results for the same seed."""
    args = ["simulate", "--clients", "5,20", "--runs", "45", "--seed", "3", "--json"]
    one, two = cli(*args, "--jobs", "1"), cli(*args, "--jobs", "2")
    assert one.returncode == two.returncode == 0, one.stderr + two.stderr
    assert one.stdout == two.stdout


def test_simulate_prints_a_table_per_strategy():
    """Without --json there is one table per strategy, a row per client count."""
    result = cli(
        "simulate",
        "--strategies",
        "exponential,decorrelated",
        "--clients",
        "2,4",
        "--runs",
        "2",
        "--seed",
        "1",
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "exponential" in lines and "decorrelated" in lines
    assert sum(1 for line in lines if line.split()[:1] in (["2"], ["4"])) == 4


def test_simulate_plot_writes_a_png_even_for_one_client_count(tmp_path):
    """--plot draws markers, so a single --clients value is a visible point."""
    target = tmp_path / "study.png"
    result = cli("simulate", "--clients", "4", "--runs", "2", "--seed", "1", "--plot", str(target))
    assert result.returncode == 0, result.stderr
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_ctrl_c_during_simulate_exits_130_with_one_line():
    """SIGINT to the whole process group (as a terminal sends it): status 130, no traceback."""
    process = subprocess.Popen(
        [*COMMAND, "simulate", "--runs", "1000000", "--jobs", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    time.sleep(2.5)
    os.killpg(process.pid, signal.SIGINT)
    _out, err = process.communicate(timeout=30)
    assert process.returncode == 130
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == "python -m backoff_iter: interrupted"


# -- overload ----------------------------------------------------------------------------


def test_overload_json_has_exactly_the_issues_keys_and_matches_python():
    """--json: one object per pair, with exactly the agreed keys, as simulate_overload gives them."""
    args = [
        "--strategies",
        "full_jitter",
        "--budgets",
        "none,token_bucket",
        "--rate",
        "50",
        "--capacity",
        "60",
        "--seconds",
        "30",
        "--seed",
        "4",
    ]
    result = cli("overload", *args, "--json")
    assert result.returncode == 0, result.stderr
    runs = strict_json(result.stdout)
    assert [set(run) for run in runs] == [
        {
            "strategy",
            "budget",
            "requests",
            "attempts",
            "amplification",
            "succeeded",
            "goodput_last_20s",
            "recovery_seconds",
            "series",
        }
    ] * 2
    assert set(runs[0]["series"]) == {"arrivals", "attempts", "goodput"}
    expected = simulate_overload(
        ["full_jitter"], ["none", "token_bucket"], rate=50, capacity=60, seconds=30, seed=4
    )
    assert runs == json.loads(json.dumps([r._asdict() for r in expected]))


def test_overload_table_has_a_row_per_pair_and_plots(tmp_path):
    """The table lists each strategy x budget; --plot writes the picture."""
    target = tmp_path / "storm.png"
    result = cli(
        "overload",
        "--strategies",
        "none,decorrelated",
        "--budgets",
        "retry_budget",
        "--rate",
        "50",
        "--capacity",
        "60",
        "--seconds",
        "30",
        "--seed",
        "1",
        "--plot",
        str(target),
    )
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines()[1:]]
    assert [row[:2] for row in rows] == [["none", "retry_budget"], ["decorrelated", "retry_budget"]]
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# -- help, version, bad usage ---------------------------------------------------------------


def test_help_lists_each_command_with_a_plain_description():
    """--help has a line per command and no reST markup; each option's help states its unit."""
    result = cli("--help")
    assert result.returncode == 0
    for command in ("show", "plan", "simulate", "overload"):
        assert any(line.split()[:1] == [command] for line in result.stdout.splitlines())
    assert "``" not in result.stdout
    simulate_help = cli("simulate", "--help").stdout
    assert "milliseconds" in simulate_help
    assert "seconds" in cli("show", "--help").stdout


def test_version():
    """--version prints the package version."""
    from backoff_iter import __version__

    assert cli("--version").stdout.strip() == f"backoff_iter {__version__}"


@pytest.mark.parametrize(
    "args, named",
    [
        (["show", "nope"], "STRATEGY"),
        (["show", "exponential", "--base", "-1"], "--base"),
        (["show", "exponential", "--base", "x"], "--base"),
        (["show", "exponential", "--factor", "0.5"], "--factor"),
        (["show", "constant", "--base", "nan"], "--base"),
        (["show", "fibonacci", "--factor", "2"], "--factor"),
        (["show", "exponential", "-n", "0"], "-n"),
        (["show", "full_jitter", "--plot", "out.svg"], "--plot"),
        (["plan", "--base", "1", "--factor", "2"], "--elapsed"),
        (["plan", "--base", "-1", "--factor", "2", "--elapsed", "3"], "--base"),
        (["plan", "--base", "1", "--ratio", "-1", "--elapsed", "3"], "--ratio"),
        (
            ["plan", "--base", "1", "--factor", "2", "--elapsed", "3", "--compare", "0.5"],
            "--compare",
        ),
        (["simulate", "--strategies", "nope"], "--strategies"),
        (["simulate", "--clients", "0"], "--clients"),
        (["simulate", "--clients", ","], "--clients"),
        (["simulate", "--runs", "-3"], "--runs"),
        (["simulate", "--cap", "-1"], "--cap"),
        (["simulate", "--base", "1e308"], "--base"),
        (["overload", "--budgets", "gold"], "--budgets"),
        (["overload", "--rate", "0"], "--rate"),
        (["overload", "--spike", "0.5"], "--spike"),
        (["overload", "--spike-for", "-1"], "--spike-for"),
        ([], "show, plan, simulate"),
    ],
)
def test_bad_input_is_one_line_naming_the_option_and_exit_status_2(args, named):
    """Unknown names, bad numbers, out-of-range values: one error line naming the option, status 2."""
    result = cli(*args)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "error:" in result.stderr and named in result.stderr
    assert "_number" not in result.stderr and "new_factor" not in result.stderr


def test_the_base_of_simulate_is_named_as_typed():
    """simulate --base 1e308 speaks of the 1e308 typed, not of the doubled inf."""
    result = cli("simulate", "--base", "1e308")
    assert "1e+308" in result.stderr and "inf" not in result.stderr


def test_progress_is_one_line_on_a_terminal():
    """With stderr on a terminal, progress rewrites one line (\\r), ending with 'done'."""
    import pty

    leader, follower = pty.openpty()
    try:
        result = subprocess.run(
            [*COMMAND, "simulate", "--clients", "20,40", "--runs", "300", "--jobs", "1"],
            stdout=subprocess.PIPE,
            stderr=follower,
            text=True,
            timeout=120,
        )
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(leader)
    shown = b"".join(chunks).decode()
    assert result.returncode == 0
    assert shown.count("\rsimulate: ") >= 3  # rewritten in place, then "done"
    lines = [line for line in shown.replace("\r\n", "\n").split("\n") if line.strip()]
    assert len(lines) == 1 and "done in" in lines[0].split("\r")[-1]
