"""The command line: output, exit statuses, strict JSON, pictures.

Most tests run ``main(argv)`` in this process (fast, and measured by coverage
directly); a few run ``python -m backoff_iter`` where only a real process
shows it: the entry point, a closed or full stdout, a reader that goes away,
Ctrl-C, memory.
"""

from __future__ import annotations

import errno
import inspect
import io
import json
import math
import os
import signal
import subprocess
import sys
from collections import namedtuple
from contextlib import suppress
from functools import wraps
from itertools import accumulate, islice
from random import Random

import pytest

from backoff_iter import ArgumentValueError, decorrelated, strategies
from backoff_iter.cli import main
from backoff_iter.cli._show import DRAWN_AT_MOST, UNTIL_AT_MOST
from backoff_iter.overload import simulate_overload
from backoff_iter.planning import plan
from backoff_iter.simulation import RUNS_PER_TASK, simulate

COMMAND = [sys.executable, "-m", "backoff_iter"]
PLAN = ["--base", "1", "--factor", "2", "--elapsed", "20"]
PNG = b"\x89PNG\r\n\x1a\n"

Ran = namedtuple("Ran", "status out err")


@pytest.fixture
def cli(capsys):
    """main(args) in this process: its exit status, stdout and stderr."""

    def run(*args):
        status = main(list(args))
        out, err = capsys.readouterr()
        return Ran(status, out, err)

    return run


def process(*args, timeout=120, **options):
    """python -m backoff_iter in a child process."""
    return subprocess.run(
        [*COMMAND, *args], capture_output=True, text=True, timeout=timeout, **options
    )


def strict_json(text):
    """json.loads that rejects Infinity and NaN, as JavaScript's JSON.parse does."""

    def reject(constant):
        raise AssertionError(f"not RFC 8259 JSON: {constant}")

    return json.loads(text, parse_constant=reject)


def one_error_line(err):
    """stderr is one line, an error, and no traceback."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "error:" in lines[0] and "Traceback" not in err, err
    return lines[0]


# -- show -------------------------------------------------------------------------


def test_python_dash_m_prints_the_readmes_table():
    """The issue's example through the real entry point: 49 sleeps end at 97.017 and 1057.190."""
    result = process("show", "exponential", "--base", "1", "--factor", "1.1", "-n", "49")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["attempt", "sleep", "elapsed"]
    assert len(lines) == 1 + 49
    assert lines[-1].split() == ["48", "97.017", "1057.190"]


def test_show_json_rows_are_the_librarys_values(cli):
    """--json gives attempt, sleep and elapsed as the strategy and a running sum give them."""
    result = cli(
        "show", "decorrelated", "--base", "1", "--cap", "30", "--seed", "4", "-n", "6", "--json"
    )
    assert result.status == 0, result.err
    rows = strict_json(result.out)
    sleeps = list(islice(decorrelated(1, 30, rng=Random(4)), 6))
    assert [row["sleep"] for row in rows] == sleeps
    assert [row["attempt"] for row in rows] == list(range(6))
    assert [row["elapsed"] for row in rows] == list(accumulate(sleeps))


def test_show_json_writes_infinity_as_null(cli):
    """Once values overflow, the JSON says null (as JavaScript does), never a bare Infinity."""
    rows = strict_json(cli("show", "exponential", "-n", "1030", "--json").out)
    assert rows[1023]["sleep"] == 2.0**1023 and rows[1023]["elapsed"] is None
    assert rows[-1] == {"attempt": 1029, "sleep": None, "elapsed": None}


@pytest.mark.parametrize("strategy", list(strategies.STRATEGIES))
def test_show_works_for_every_strategy_with_its_defaults(cli, strategy):
    """Each strategy of the registry can be shown with its defaults: ten rows by default."""
    result = cli("show", strategy, "--json")
    assert result.status == 0, result.err
    assert len(strict_json(result.out)) == 10


def test_show_and_plan_print_a_sleep_below_half_a_millisecond_in_digits_not_as_0(cli):
    """--base 0.0001 sleeps 0.0001, then 0.0002: the table said 0.000 (three decimals), and
    plan's sleep before and after too; a sleep of 0 is still 0.000."""
    rows = cli("show", "exponential", "--base", "0.0001", "-n", "3").out.splitlines()[1:]
    assert [row.split() for row in rows] == [
        ["0", "0.0001", "0.0001"],
        ["1", "0.0002", "0.0003"],
        ["2", "0.0004", "0.001"],
    ]
    assert cli("show", "constant", "--base", "0", "-n", "1").out.split()[-2:] == ["0.000"] * 2
    planned = cli("plan", "--base", "2e-5", "--factor", "2", "--elapsed", "1e-4").out
    assert "sleep before: 4e-05" in planned and "sleep after:  8e-05" in planned


def test_show_until_elapsed_stops_once_the_time_slept_reaches_it(cli):
    """Without -n, --until-elapsed 20 ends at the row whose running total first reaches 20."""
    rows = strict_json(cli("show", "exponential", "--until-elapsed", "20", "--json").out)
    assert [row["elapsed"] for row in rows] == [1.0, 3.0, 7.0, 15.0, 31.0]
    rows = strict_json(cli("show", "exponential", "--until-elapsed", "15", "--json").out)
    assert rows[-1]["elapsed"] == 15.0


@pytest.mark.parametrize(
    "strategy",
    [
        ["constant", "--base", "0"],
        ["exponential", "--base", "0"],
        ["linear", "--base", "0", "--step", "0"],
        ["full_jitter", "--cap", "0"],
        ["constant", "--base", "1e-300"],  # reachable, in 5e300 rows
    ],
)
def test_a_time_never_reached_ends_after_a_bounded_count_with_a_note(cli, strategy):
    """--until-elapsed that the time slept cannot reach (or not soon) stops after the rows
    the help names, with one note on stderr naming the option; -n sets that bound."""
    result = cli("show", *strategy, "--until-elapsed", "5", "--json")
    assert result.status == 0
    assert len(strict_json(result.out)) == UNTIL_AT_MOST
    note = result.err.strip().splitlines()
    assert len(note) == 1 and "--until-elapsed 5" in note[0] and "-n" in note[0]
    assert f"{UNTIL_AT_MOST:,}" in cli("show", "--help").out
    bounded = cli("show", *strategy, "--until-elapsed", "5", "-n", "7", "--json")
    assert len(strict_json(bounded.out)) == 7
    assert "stopped at -n 7" in bounded.err and "--until-elapsed 5" in bounded.err


@pytest.mark.parametrize("output", [[], ["--json"], ["--plot", "x.png"]])
def test_n_that_ends_the_run_before_until_elapsed_says_so_in_one_line(cli, tmp_path, drawn, output):
    """-n 3 with --until-elapsed 1000 (reached after 10 sleeps): the 3 rows (or attempts
    drawn), and one line on stderr saying -n stopped them short of the time asked for."""
    args = [a if a != "x.png" else str(tmp_path / a) for a in output]
    result = cli("show", "exponential", "--until-elapsed", "1000", "-n", "3", *args)
    assert result.status == 0, result.err
    note = [line for line in result.err.splitlines() if "wrote" not in line]
    assert note == [
        "python -m backoff_iter show: stopped at -n 3, 7 s slept:"
        " --until-elapsed 1000 is not reached"
    ]
    reached = cli("show", "exponential", "--until-elapsed", "7", "-n", "3", *args)
    assert [line for line in reached.err.splitlines() if "wrote" not in line] == []


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads memory from /proc")
def test_show_streams_a_hundred_million_rows_in_flat_memory():
    """The first rows of -n 100000000 arrive while the rest are still to come, and memory
    does not grow as they do."""
    child = subprocess.Popen(
        [*COMMAND, "show", "exponential", "-n", "100000000"], stdout=subprocess.PIPE, text=True
    )
    try:
        child.stdout.readline()
        assert child.stdout.readline().split()[:2] == ["0", "1.000"]
        assert child.poll() is None  # streamed: the first row came before the last was made
        for _ in range(20_000):
            child.stdout.readline()
        early = rss_kb(child.pid)
        for _ in range(150_000):
            child.stdout.readline()
        assert rss_kb(child.pid) - early < 2_000  # kB: nothing accumulates
    finally:
        child.kill()
        child.wait()


def test_a_reader_that_goes_away_ends_it_quietly():
    """`| head -1`: no BrokenPipeError traceback, status 0."""
    result = subprocess.run(
        f"{sys.executable} -m backoff_iter show exponential -n 10000000 | head -1; "
        'echo "status ${PIPESTATUS[0]}" >&2',
        shell=True,
        capture_output=True,
        text=True,
        timeout=60,
        executable="/bin/bash",
    )
    assert result.stdout.split() == ["attempt", "sleep", "elapsed"]
    assert result.stderr == "status 0\n"


def reader_gone(command, environment):
    """python -m backoff_iter *command* whose stdout's reader is gone before anything was
    written (``| true``), its stdout "buffered" (a shell's) or "unbuffered"
    (PYTHONUNBUFFERED, as on these machines): its exit status and stderr."""
    child = subprocess.Popen(
        [*COMMAND, *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=BUFFERED if environment == "buffered" else UNBUFFERED,
    )
    child.stdout.close()
    err = child.stderr.read()
    return child.wait(timeout=120), err


@pytest.mark.parametrize("environment", ["buffered", "unbuffered"])
@pytest.mark.parametrize(
    "command",
    [
        ["show", "exponential"],
        ["plan", "--base", "1", "--factor", "2", "--elapsed", "10"],
        ["simulate", "--clients", "2,3", "--runs", "1"],
        ["overload", "--seconds", "30", "--rate", "10"],
    ],
    ids=lambda command: command[0],
)
def test_a_reader_gone_before_a_short_output_ends_it_quietly(command, environment):
    """`| true`: the reader is gone before the first line.  Status 0, nothing on stderr but
    the progress.  A buffered stdout (a shell's, unless PYTHONUNBUFFERED) held the output
    it could not write, and the interpreter's last flush failed again: "Exception ignored
    ... BrokenPipeError", status 120."""
    status, err = reader_gone(command, environment)
    assert status == 0, err
    assert "Exception ignored" not in err and "Traceback" not in err, err


@pytest.mark.parametrize(
    "command",
    [
        ["simulate", "--clients", "2,3", "--runs", "1"],
        ["overload", "--seconds", "30", "--rate", "10"],
    ],
    ids=["simulate", "overload"],
)
@pytest.mark.parametrize("environment", ["buffered", "unbuffered"])
def test_a_reader_gone_before_the_table_keeps_no_picture_from_being_drawn(
    command, environment, tmp_path
):
    """The reader of stdout went away before the tables came (``| true``): the picture
    asked for with --plot is drawn all the same, and the command ends quietly, status 0.
    The broken pipe of a table's write (at once where stdout is unbuffered) ended the
    command before the picture, which never appeared."""
    path = tmp_path / "picture.png"
    status, err = reader_gone([*command, "--plot", str(path)], environment)
    assert status == 0, err
    assert path.read_bytes().startswith(b"\x89PNG") and f"wrote {path}" in err
    assert "Traceback" not in err


def test_a_reader_gone_and_a_picture_that_cannot_be_written_is_status_1_alone(tmp_path):
    """The reader of stdout is gone and the picture's file is full (a link to /dev/full):
    status 1 saying why, never "Exception ignored" and status 120 from the interpreter's
    last flush of the output it held (a buffered stdout: a shell's)."""
    path = tmp_path / "full.png"
    path.symlink_to("/dev/full")
    command = ["overload", "--seconds", "30", "--rate", "10", "--plot", str(path)]
    status, err = reader_gone(command, "buffered")
    assert status == 1, err
    assert f"cannot write {path}" in err and "Exception ignored" not in err, err


def with_fds(redirections, *args, **options):
    """python -m backoff_iter with its file descriptors redirected as in a shell: `>&-`."""
    return subprocess.run(
        ["/bin/bash", "-c", f'exec {redirections}; exec "$@"', "bash", *COMMAND, *args],
        capture_output=True,
        text=True,
        timeout=60,
        **options,
    )


# As a shell usually starts it: stdout buffered, so a full disk fails at the last flush only;
# and unbuffered, so that it fails at the first write.
BUFFERED = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
UNBUFFERED = {**os.environ, "PYTHONUNBUFFERED": "1"}


@pytest.mark.parametrize("env", [BUFFERED, UNBUFFERED], ids=["buffered", "unbuffered"])
def test_an_output_that_cannot_be_written_is_one_line_and_status_1(tmp_path, env):
    """A closed stdout (`>&-`) and a full disk (/dev/full), whether the rows fail as they
    are written or at the last flush, stdout buffered or not: status 1, one line saying why
    (not the interpreter's own failed flush at exit, status 120)."""
    closed = with_fds(">&-", "show", "exponential", env=env)
    assert closed.returncode == 1
    assert "stdout is closed" in one_error_line(closed.stderr)
    for args in (["show", "exponential"], ["show", "exponential", "-n", "100000"], ["plan", *PLAN]):
        full = with_fds(">/dev/full", *args, env=env)
        assert full.returncode == 1
        assert "No space left" in one_error_line(full.stderr)


def test_a_picture_needs_no_stdout_and_a_lost_stderr_changes_no_status(tmp_path):
    """--plot works with stdout closed; with stderr closed or full, bad usage is still 2 and
    a note or progress fails nothing."""
    target = tmp_path / "closed.png"
    drawn = with_fds(">&-", "show", "exponential", "-n", "3", "--plot", str(target))
    assert drawn.returncode == 0, drawn.stderr
    assert target.read_bytes()[:8] == PNG
    for lost in ("2>&-", "2>/dev/full"):
        assert with_fds(lost, "show", "exponential", "--base", "-1").returncode == 2
        noted = with_fds(lost, "show", "constant", "--base", "0", "--until-elapsed", "1")
        assert noted.returncode == 0 and noted.stdout.count("\n") == 1 + UNTIL_AT_MOST


@pytest.mark.parametrize(
    "args", [["show", "exponential"], ["plan", *PLAN], ["simulate"], ["overload"]]
)
def test_each_command_with_stdout_closed_fails_before_any_work(cli, monkeypatch, args):
    """With no stdout (`>&-` leaves sys.stdout None) a command that prints ends at once, 1."""
    from backoff_iter import overload, simulation

    for module, name in ((simulation, "simulate"), (overload, "simulate_overload")):

        @wraps(getattr(module, name))  # the same signature: the command line reads its defaults
        def never(*args, **options):
            raise AssertionError("worked for nothing")

        monkeypatch.setattr(module, name, never)
    monkeypatch.setattr(sys, "stdout", None)
    result = cli(*args)
    assert result.status == 1
    assert "stdout is closed" in one_error_line(result.err)


def test_an_output_that_fails_at_the_last_flush_is_status_1(cli, monkeypatch):
    """Buffered rows that reach a full disk only when flushed: status 1, one line."""
    full = open("/dev/full", "w")  # noqa: SIM115 - closed below, where it fails once more
    monkeypatch.setattr(sys, "stdout", full)
    result = cli("plan", *PLAN)
    monkeypatch.undo()
    with suppress(OSError):  # the rows are still buffered: closing flushes them again
        full.close()
    assert result.status == 1
    assert "No space left" in one_error_line(result.err)


def test_a_stdout_that_cannot_encode_a_character_escapes_it(monkeypatch):
    """simulate --help (its "clients\u00b2") on an ASCII stdout (PYTHONIOENCODING=ascii):
    the character escaped, as stderr escapes it, and status 0, not a traceback."""
    raw = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(raw, encoding="ascii"))
    assert main(["simulate", "--help"]) == 0
    assert b"clients\\xb2 x runs" in raw.getvalue()


def test_a_stdout_with_no_file_under_it_that_fails_is_an_output_error(monkeypatch):
    """A failed write to a stdout with no file descriptor (nothing to point at /dev/null)
    is still the one OutputError."""
    from backoff_iter.cli._common import OutputError, write

    class Full(io.StringIO):
        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(sys, "stdout", Full())
    with pytest.raises(OutputError, match="No space left"):
        write("row\n")


def test_a_command_loads_its_own_module_only():
    """plan imports the plan command's module, not show's, simulate's or
    overload's (their pictures and simulators); --help lists them all."""
    code = (
        "import sys, backoff_iter.cli as cli\n"
        "status = cli.main(['plan', '--base', '1', '--factor', '2', '--elapsed', '20'])\n"
        "print(status, sorted(m for m in sys.modules if m.startswith('backoff_iter.cli._')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert (
        done.stdout.splitlines()[-1] == "0 ['backoff_iter.cli._common', 'backoff_iter.cli._plan']"
    )
    listed = subprocess.run(
        [sys.executable, "-m", "backoff_iter", "--help"], capture_output=True, text=True, check=True
    ).stdout
    from backoff_iter.cli import COMMANDS

    for name, module in COMMANDS.items():
        command = __import__(f"backoff_iter.cli.{module}", fromlist=["NAME"])
        assert name == command.NAME
        assert command.SUMMARY.split()[0] in listed  # each command is listed with its summary


def test_the_top_level_help_asked_before_a_command_lists_every_command(cli):
    """--help first is the top-level help, whatever follows: every command and
    its summary; after a command it is that command's help."""
    from backoff_iter.cli import COMMANDS

    listed = cli("--help", "show").out
    for module in COMMANDS.values():
        summary = __import__(f"backoff_iter.cli.{module}", fromlist=["SUMMARY"]).SUMMARY
        assert summary.split()[0] in listed and summary.split()[-1] in listed
    assert "--base" not in listed  # not show's own options
    assert "--base" in cli("show", "--help").out


def test_a_word_that_names_no_command_is_an_error_listing_them(cli):
    """A mistyped command names the choices, whichever command modules were loaded."""
    result = cli("plam")
    assert result.status == 2
    assert "invalid choice: 'plam'" in one_error_line(result.err)
    assert "'show', 'plan', 'simulate', 'overload'" in result.err


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        (["shwo"], "show"),  # a typo of a command
        (["show", "full-jitter"], "full_jitter"),  # dashes for underscores
        (["show", "Exponential"], "exponential"),  # another case
        (["show", "fibo"], "fibonacci"),  # the one name it begins
        (["overload", "--server", "serve_all"], "serve-all"),  # underscores for dashes
    ],
)
def test_a_mistyped_choice_is_offered_the_name_meant(cli, typed, meant):
    """A choice mistyped is refused with every choice listed and the one meant offered."""
    result = cli(*typed)
    assert result.status == 2
    line = one_error_line(result.err)
    assert f"invalid choice: {typed[-1]!r}" in line and line.endswith(f"did you mean {meant!r}?")


@pytest.mark.parametrize(
    "typed, meant",
    [
        (["show", "full_jitter", "--sed", "1"], "--seed"),
        (["show", "full_jitter", "--sed=2026"], "--seed"),  # the option, not its value
        (["plan", *PLAN, "--jsn"], "--json"),
        (["overload", "--sead", "1"], "--seed"),
    ],
)
def test_a_mistyped_option_is_refused_by_its_command_offering_the_one_meant(cli, typed, meant):
    """`show full_jitter --sed 1`: the error came from the top level (no command named)
    and offered nothing; now the command's own line offers its option meant."""
    result = cli(*typed)
    assert result.status == 2
    line = one_error_line(result.err)
    assert line.startswith(f"python -m backoff_iter {typed[0]}: error: unrecognized arguments:")
    assert line.endswith(f"did you mean {meant!r}?"), line


@pytest.mark.parametrize(
    "typed, named, meant",
    [
        (["simulate", "--strategies", "exponential,full-jitter"], "full-jitter", "full_jitter"),
        (["overload", "--strategies", "none,Decorrelated"], "Decorrelated", "decorrelated"),
        (["overload", "--budgets", "none,token-bucket"], "token-bucket", "token_bucket"),
        (["overload", "--budgets", "breaker+retry-quota"], "retry-quota", "retry_quota"),
    ],
)
def test_a_mistyped_name_in_a_list_is_offered_the_name_meant(cli, typed, named, meant):
    """`simulate --strategies full-jitter` listed the names but offered none, where
    `show full-jitter` offers 'full_jitter': each list now offers the name meant."""
    result = cli(*typed)
    assert result.status == 2
    line = one_error_line(result.err)
    assert f"argument {typed[1]}: invalid choice: {named!r} (choose from " in line, line
    assert line.endswith(f"did you mean {meant!r}?"), line


@pytest.mark.parametrize(
    "option, given, message",
    [
        ("--strategies", "full_jitter,full_jitter", "'full_jitter' given twice"),
        ("--strategies", "none,full_jitter,none", "'none' given twice"),
        ("--budgets", "none,token_bucket,none", "'none' given twice"),
        ("--budgets", "breaker+token_bucket,breaker+token_bucket", "'breaker+token_bucket' given"),
        (
            "--budgets",
            "breaker+token_bucket,token_bucket+breaker",
            "is 'breaker+token_bucket' again",
        ),
    ],
)
def test_overload_refuses_a_name_given_twice_naming_the_option_and_the_name(
    cli, storm, option, given, message
):
    """`--strategies full,full` ran each pair twice: a name (or a budget's parts in
    another order) given twice is bad usage naming the option and the name, before any work."""
    result = cli("overload", option, given)
    assert result.status == 2
    line = one_error_line(result.err)
    assert f"error: argument {option}: " in line and message in line, line
    assert line.endswith("give each once"), line
    assert storm == []


def test_an_unrecognized_word_near_no_option_is_offered_none(cli):
    """A stray word, or an option near none of the command's, is named with nothing offered."""
    for extra in ("stray", "--zzzzzz"):
        line = one_error_line(cli("show", "exponential", extra).err)
        assert line == f"python -m backoff_iter show: error: unrecognized arguments: {extra}"


def test_a_choice_near_no_name_is_offered_none(cli):
    """Nothing is offered for a word near no choice, nor for one that begins several."""
    for typed in ("zzz", "e"):
        line = one_error_line(cli("show", typed).err)
        assert f"invalid choice: {typed!r}" in line and "did you mean" not in line
        assert "'constant', 'linear', 'exponential'" in line


def test_help_asked_for_another_file_goes_there(capsys):
    """The parser's writer sends a help asked for elsewhere (print_help(file)) there."""
    from backoff_iter.cli import parser

    elsewhere = io.StringIO()
    parser().print_help(elsewhere)
    assert "exit status" in elsewhere.getvalue()
    assert capsys.readouterr() == ("", "")


def test_writing_without_a_stdout_is_an_output_error(monkeypatch):
    """The writer itself refuses a closed stdout, whichever command forgets to say it prints."""
    from backoff_iter.cli._common import OutputError, write

    monkeypatch.setattr(sys, "stdout", None)
    with pytest.raises(OutputError, match="stdout is closed"):
        write("row\n")


@pytest.mark.parametrize(
    "options", [["-n", "1000"], ["--base", "10", "--factor", "10", "-n", "400"]]
)
def test_show_plots_values_near_the_largest_float(cli, tmp_path, recwarn, options):
    """Sleeps up to 1e308: a picture whose axis stops at 1e200 (said on it), no warning."""
    from matplotlib import pyplot

    from backoff_iter.cli import _pictures

    target = tmp_path / "huge.png"
    drawn = []
    real = pyplot.Figure.savefig

    def keep(figure, *args, **kwargs):
        drawn.append([axes.get_ylim() for axes in figure.axes])
        return real(figure, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pyplot.Figure, "savefig", keep)
        result = cli("show", "exponential", *options, "--plot", str(target))
    assert result.status == 0 and result.err == f"show: wrote {target}\n"
    overflows = [w for w in recwarn.list if issubclass(w.category, RuntimeWarning)]
    assert target.read_bytes()[:8] == PNG and not overflows  # numpy's overflow warnings
    assert [top for _, top in drawn[0]] == [_pictures._LOG_TOP] * 2


def test_show_plot_says_where_it_wrote_and_draws_a_png(cli, tmp_path):
    """A good --plot path gets a PNG and one line on stderr naming it; stdout stays empty."""
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
        "20",
        "--plot",
        str(target),
    )
    assert result.status == 0, result.err
    assert result.out == ""
    assert result.err == f"show: wrote {target}\n"
    assert target.read_bytes()[:8] == PNG


def test_a_plot_path_that_cannot_be_written_is_bad_usage_before_any_work(cli, tmp_path):
    """A .jpg, a missing directory, a directory named like a picture: status 2, naming --plot."""
    (tmp_path / "folder.png").mkdir()
    for bad in ("chart.jpg", "missing/chart.png", "folder.png"):
        result = cli("show", "full_jitter", "--plot", str(tmp_path / bad))
        assert result.status == 2
        assert "--plot" in one_error_line(result.err)


def test_a_plot_path_may_say_png_in_capitals(cli, tmp_path, drawn):
    """CHART.PNG is a PNG file name too."""
    result = cli("show", "exponential", "--plot", str(tmp_path / "CHART.PNG"))
    assert result.status == 0, result.err
    assert len(drawn) == 1


def test_a_plot_without_matplotlib_is_bad_usage_saying_what_to_install(cli, monkeypatch):
    """No matplotlib: --plot is refused before any work, naming the extra to install."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib fails
    result = cli("show", "exponential", "--plot", "x.png")
    assert result.status == 2
    line = one_error_line(result.err)
    assert "--plot" in line and "pip install matplotlib (in backoff_iter's 'plot' extra)" in line


def test_a_picture_that_cannot_be_written_is_one_line_and_status_1(cli, tmp_path):
    """--plot into a full device (a .png link to /dev/full): status 1, one line naming the file."""
    target = tmp_path / "full.png"
    target.symlink_to("/dev/full")
    result = cli("show", "exponential", "-n", "3", "--plot", str(target))
    assert result.status == 1
    line = one_error_line(result.err)
    assert str(target) in line and "No space left" in line


@pytest.fixture
def drawn(monkeypatch):
    """What show --plot hands to the picture: (title, schedules, reference) per call."""
    from backoff_iter.cli import _pictures

    calls = []
    monkeypatch.setattr(_pictures, "show", lambda path, *rest: calls.append(rest))
    return calls


@pytest.mark.parametrize(
    "args",
    [
        ["constant", "--base", "0.001", "--until-elapsed", "1"],  # the issue's 1,000 rows
        ["exponential", "--until-elapsed", "100"],
        ["exponential", "-n", "60"],
        ["exponential"],
        ["full_jitter", "--seed", "3", "--until-elapsed", "20", "--samples", "5"],
        ["smooth_jitter", "--seed", "3", "-n", "7", "--until-elapsed", "1e9", "--samples", "5"],
    ],
)
def test_the_picture_draws_the_attempts_the_table_shows(cli, tmp_path, drawn, args):
    """--plot draws as many attempts as the table prints with the same options, and its
    first schedule is the table's (the same seed); jittered ones add samples of that length."""
    samples = args.index("--samples") if "--samples" in args else len(args)
    table = strict_json(cli("show", *args[:samples], *args[samples + 2 :], "--json").out)
    result = cli("show", *args, "--plot", str(tmp_path / "x.png"))
    assert result.status == 0, result.err
    ((_title, schedules, _reference),) = drawn
    assert schedules[0] == [row["sleep"] for row in table]
    assert {len(s) for s in schedules} == {len(table)}


def test_the_picture_names_its_seed_and_compares_with_the_strategys_own_exponential(
    cli, tmp_path, drawn
):
    """A jittered picture's title names the seed and the samples; its reference is the plain
    exponential with the strategy's own base, factor and cap (decorrelated's factor 3)."""
    target = str(tmp_path / "x.png")
    cli("show", "decorrelated", "-n", "9", "--samples", "4", "--plot", target)
    cli("show", "decorrelated", "--seed", "7", "-n", "9", "--samples", "4", "--plot", target)
    (unseeded, _, _), (seeded, _, (label, sleeps)) = drawn
    assert "unseeded" in unseeded and "4 schedules" in unseeded
    assert "seed 7" in seeded
    factor = inspect.signature(decorrelated).parameters["factor"].default
    assert label == f"exponential(base=1, factor={factor:g}, cap=inf)"
    assert sleeps == [factor**n for n in range(9)]


def test_a_picture_of_more_attempts_than_it_can_draw_is_bad_usage(cli, tmp_path):
    """--plot draws at most DRAWN_AT_MOST attempts: more, asked by -n or needed by
    --until-elapsed, is status 2 naming the option."""
    target = str(tmp_path / "x.png")
    many = cli("show", "exponential", "-n", str(DRAWN_AT_MOST + 1), "--plot", target)
    assert many.status == 2 and "-n" in one_error_line(many.err)
    never = cli("show", "constant", "--base", "0", "--until-elapsed", "5", "--plot", target)
    assert never.status == 2 and "--until-elapsed" in one_error_line(never.err)
    assert not os.path.exists(target)


def test_show_help_gives_each_default_from_the_strategies_signatures(cli):
    """--base, --cap, --factor: their defaults, read here from the signatures; --seed takes N."""
    text = " ".join(cli("show", "--help").out.split())
    found = {}
    for name, function in strategies.STRATEGIES.items():
        for parameter, spelled in zip(
            inspect.signature(function).parameters.values(), strategies.parameters(name)
        ):
            found.setdefault(spelled, {}).setdefault(parameter.default, []).append(name)
    for spelled in ("base", "cap", "factor"):
        assert any(f"default {value:g}" in text for value in found[spelled]), spelled
        for value, names in found[spelled].items():
            assert f"{value:g}" in text
            if len(found[spelled]) > 1 and len(names) == 1:  # the exception, named
                assert f"{value:g} for {names[0]}" in text
    assert "--seed N" in text and "RNG" not in text


# -- plan ---------------------------------------------------------------------------


def test_plan_reports_the_count_and_the_sleeps_around_it(cli):
    """plan prints the count at T and the sleeps before and after; --json keeps the inputs by name."""
    text = cli("plan", "--base", "1", "--factor", "2", "--elapsed", "20")
    assert text.status == 0, text.err
    expected = plan(1, 2, 20)
    lines = text.out.splitlines()
    assert lines[1].split() == [
        "retries:",
        str(expected.retries),
        "(exactly",
        f"{expected.exact:.3f})",
    ]
    assert lines[3:5] == [
        f"  sleep before: {expected.sleep_before:.3f}",
        f"  sleep after:  {expected.sleep_after:.3f}",
    ]
    data = strict_json(cli("plan", "--base", "1", "--factor", "2", "--elapsed", "20", "--json").out)
    assert data["elapsed"] == 20.0  # the input, not the time slept
    assert data["slept"] == expected.elapsed == 15.0
    assert (data["retries"], data["exact"], data["sleep_before"], data["sleep_after"]) == (
        expected.retries,
        expected.exact,
        expected.sleep_before,
        expected.sleep_after,
    )


def test_plan_ratio_solves_the_factor_and_compare_gives_both_counts(cli):
    """--ratio 0.1 means factor 1.1; --compare adds the other factor's count and log ratio;
    a compared factor of 1 (linear) has no long-run ratio: null."""
    args = ["plan", "--base", "1", "--ratio", "0.1", "--elapsed", "1057.19", "--json"]
    data = strict_json(cli(*args, "--compare", "2").out)
    assert data["factor"] == 1.1 and data["ratio"] == 0.1 and data["retries"] == 49
    assert data["compare"]["retries"] == plan(1, 2, 1057.19).retries
    assert data["compare"]["ratio"] == math.log(1.1) / math.log(2)
    linear = strict_json(cli(*args, "--compare", "1").out)["compare"]
    assert linear["retries"] == plan(1, 1, 1057.19).retries == 1057
    assert linear["ratio"] is None
    text = cli(*args[:-1], "--compare", "1").out.splitlines()[-1]
    assert text == "factor 1 over the same time: 1057 retries (exactly 1057.190)"


def test_plan_counts_a_first_sleep_that_ends_right_at_the_elapsed_time(cli):
    """--base 0.1 --factor 4 --elapsed 0.1: one sleep of 0.1 fits; it printed 0 retries
    (exactly 1.000) and a "sleep after" of 0.100 that would have fitted."""
    result = cli("plan", "--base", "0.1", "--factor", "4", "--elapsed", "0.1")
    assert result.status == 0, result.err
    assert result.out.splitlines()[1:] == [
        "  retries:      1 (exactly 1.000)",
        "  slept:        0.100",
        "  sleep before: 0.100",
        "  sleep after:  0.400",
    ]


@pytest.mark.parametrize(
    "args, line",
    [
        (
            ["--base", "1e-300", "--factor", "1e300", "--elapsed", "1e300"],
            "2 (exactly just under 3)",
        ),
        (
            ["--base", "1", "--factor", "1.0000000000000002", "--elapsed", "10"],
            "9 (exactly just under 10)",
        ),
        (
            ["--base", "5e-324", "--factor", "1", "--elapsed", "1e308"],
            str(plan(5e-324, 1, 1e308).retries),
        ),
    ],
)
def test_plan_never_shows_a_count_beside_an_exact_value_past_it(cli, args, line):
    """The real number of retries that fit, rounded to three decimals, came to the next
    whole count ("retries: 9 (exactly 10.000)"), and one past floats said "(exactly inf)"
    beside a count of 632 digits: the first says "just under", the second nothing."""
    result = cli("plan", *args)
    assert result.status == 0, result.err
    assert result.out.splitlines()[1] == f"  retries:      {line}"


def test_plan_shows_a_huge_long_run_ratio_in_significant_digits(cli):
    """log r / log r2 of a factor near 1 against a huge one: six significant digits, not a
    number of twenty digits and three decimals."""
    result = cli("plan", "--base", "1", "--factor", "1e300", "--elapsed", "10", "--compare",
                 "1.0000000000000002")  # fmt: skip
    assert result.status == 0, result.err
    ratio = math.log(1e300) / math.log(1.0000000000000002)
    assert result.out.splitlines()[-1].endswith(f"= {ratio:.6g} times as many")


def test_plan_shows_a_factor_near_1_as_it_is_not_as_1(cli):
    """--ratio 1e-7 is factor 1.0000001, printed so: it was "factor 1" (as :g rounds it),
    which is the constant schedule; the same for a --compare factor and the base."""
    args = ["plan", "--base", "1.0000001", "--ratio", "1e-7", "--elapsed", "100"]
    lines = cli(*args, "--compare", "1.0000002").out.splitlines()
    assert lines[0] == "base 1.0000001, factor 1.0000001: by elapsed 100"
    assert lines[-1].startswith("factor 1.0000002 over the same time: ")
    assert "log 1.0000001 / log 1.0000002 = " in lines[-1]


def test_plan_shows_a_long_run_ratio_below_a_thousandth_in_digits_not_as_0(cli):
    """Factor 1.0000001 against 2 retries 1.44e-07 times as often in the long run: it said
    "0.000 times as many"; a ratio of a thousandth or more keeps its three decimals."""
    args = ["plan", "--base", "1", "--elapsed", "100", "--compare", "2"]
    assert cli(*args, "--factor", "1.0000001").out.endswith(" = 1.44e-07 times as many\n")
    assert cli(*args, "--factor", "1.001").out.endswith(" = 0.001 times as many\n")


@pytest.mark.parametrize(
    "base, factor, elapsed",
    [("1", "1", "1e300"), ("1e-308", "1.0000000001", "1e308"), ("1e-300", "1.001", "1e300")],
)
def test_plan_gives_the_librarys_exact_count_for_extreme_inputs(cli, base, factor, elapsed):
    """The issue's extremes (once 20 s and more, or 710,137 for 1,375,330) print plan()'s figures."""
    result = cli("plan", "--base", base, "--factor", factor, "--elapsed", elapsed, "--json")
    assert result.status == 0, result.err
    data = strict_json(result.out)
    expected = plan(float(base), float(factor), float(elapsed))
    assert (data["retries"], data["slept"]) == (expected.retries, expected.elapsed)


# -- simulate ---------------------------------------------------------------------------
# The studies here run on one process (--jobs 1) or are interrupted: a pool that ends
# normally is terminated (SIGTERM) by simulation.py while its workers write their
# coverage data, which leaves corrupt .coverage.* files behind.


def test_simulate_json_matches_the_python_api_and_shows_progress(cli):
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
    assert result.status == 0, result.err
    rows = strict_json(result.out)
    expected = simulate(["none", "full_jitter"], clients=[3, 6], runs=4, seed=9)
    assert rows == [r._asdict() for r in expected]
    assert result.err.splitlines()[-1].startswith("simulate: done in")


def test_simulate_prints_a_table_per_strategy(cli):
    """Without --json: per strategy its name, a header, and a row per client count holding
    that count's work and time, as simulate() gives them."""
    args = ["--strategies", "exponential,decorrelated", "--clients", "2,4", "--runs", "2"]
    result = cli("simulate", *args, "--seed", "1", "--jobs", "1")
    assert result.status == 0, result.err
    expected = simulate(["exponential", "decorrelated"], clients=[2, 4], runs=2, seed=1)
    blocks = [block.splitlines() for block in result.out.strip().split("\n\n")]
    assert [block[0] for block in blocks] == ["exponential", "decorrelated"]
    for block, name in zip(blocks, ["exponential", "decorrelated"]):
        assert block[1].split() == ["clients", "work", "time", "(ms)"]
        assert [row.split() for row in block[2:]] == [
            [str(r.clients), f"{r.work:.1f}", f"{r.time:.1f}"]
            for r in expected
            if r.strategy == name
        ]


def test_simulate_writes_a_time_near_the_largest_float_in_significant_digits(cli):
    """--base 1e307: the time cell was a number of 300 digits (f"{time:.1f}"); it is
    written in six significant digits, as show and plan write such numbers."""
    args = ["--strategies", "exponential", "--clients", "10", "--runs", "2", "--cap", "inf"]
    result = cli("simulate", *args, "--base", "1e307", "--seed", "1", "--jobs", "1")
    assert result.status == 0, result.err
    [row] = [line.split() for line in result.out.splitlines() if line.lstrip().startswith("10 ")]
    assert row[0] == "10" and len(row[2]) < 16 and float(row[2]) > 1e306, row


def test_show_a_negative_seed_draws_its_own_schedule(cli):
    """--seed -5 drew what --seed 5 draws (Python's Random seeds by the absolute value):
    two seeds, one schedule.  Each seed is its own, the same at every run."""
    drawn = {
        seed: cli("show", "full_jitter", "--seed", seed, "-n", "4", "--json").out
        for seed in ("5", "-5")
    }
    assert drawn["5"] != drawn["-5"]
    assert cli("show", "full_jitter", "--seed", "-5", "-n", "4", "--json").out == drawn["-5"]


@pytest.fixture
def study(monkeypatch):
    """The keyword arguments of each simulation.simulate call, which returns no rows."""
    from backoff_iter import simulation

    calls = []

    @wraps(simulation.simulate)  # the same signature: the command line reads its defaults
    def record(*args, **options):
        calls.append(options)
        return []

    monkeypatch.setattr(simulation, "simulate", record)
    return calls


@pytest.mark.parametrize(
    "values, listed",
    [
        ((10, 20, 30, 40, 50), "10,20,...,50"),
        ((1, 2, 4), "1,2,4"),
        ((1, 2, 3), "1,2,3"),
        ((3,), "3"),
    ],
)
def test_default_client_counts_are_listed_short_when_evenly_spaced(values, listed):
    """simulate --help lists an even run of counts by its ends, any other by every count."""
    from backoff_iter.cli._simulate import _listed

    assert _listed(values) == listed


def test_simulate_starts_no_more_processes_than_it_has_tasks(cli, study, monkeypatch):
    """--jobs 256 for 5 tasks runs on 5 processes; by default one per core, as bounded."""
    args = ["simulate", "--clients", "5", "--runs", str(RUNS_PER_TASK), "--json"]
    cli(*args, "--jobs", "256")  # five strategies, one client count, one task each
    cli(*args, "--strategies", "exponential", "--jobs", "256")
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    cli(*args)
    cli(*args, "--runs", str(100 * RUNS_PER_TASK))
    assert [call["jobs"] for call in study] == [5, 1, 5, 64]
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    cli(*args)
    assert study[-1]["jobs"] == 1


@pytest.mark.parametrize(
    "args, option",
    [
        (["--runs", "1" + "0" * 21], "--runs"),
        (["--runs", "1" + "0" * 400], "--runs"),
        (["--clients", "200000", "--runs", "1"], "--clients"),
    ],
)
def test_simulate_refuses_a_study_beyond_its_cost_bound_naming_the_option(cli, args, option):
    """A study of clients² x runs beyond simulation.MAX_WORK is bad usage naming the
    option: --runs 10**21 gave an OverflowError traceback, --clients 100000 ran for
    hours without a word."""
    result = cli("simulate", "--strategies", "none", *args)
    assert result.status == 2
    line = one_error_line(result.err)
    assert line.startswith(f"python -m backoff_iter simulate: error: {option}: a study may")


def test_simulate_refuses_more_jobs_than_its_bound_before_any_work(cli, study):
    """--jobs 1000000 is bad usage naming --jobs and the bound (it once spawned processes
    until the machine gave up); the bound itself is accepted, and said in --help."""
    from backoff_iter.cli._simulate import MAX_JOBS

    for jobs in (MAX_JOBS + 1, 1_000_000):
        result = cli("simulate", "--jobs", str(jobs))
        assert result.status == 2
        line = one_error_line(result.err)
        assert f"--jobs: must be at most {MAX_JOBS:,}, got {jobs}" in line
    assert study == []
    assert cli("simulate", "--jobs", str(MAX_JOBS), "--json").status == 0
    assert f"at most {MAX_JOBS}" in " ".join(cli("simulate", "--help").out.split())


def test_simulate_plot_writes_a_png_even_for_one_client_count(cli, tmp_path):
    """--plot draws markers, so a single --clients value is a visible point; --json stays JSON."""
    target = tmp_path / "study.png"
    result = cli(
        "simulate",
        "--clients",
        "4",
        "--runs",
        "2",
        "--seed",
        "1",
        "--jobs",
        "1",
        "--json",
        "--plot",
        str(target),
    )
    assert result.status == 0, result.err
    assert len(strict_json(result.out)) == 5
    assert result.err.splitlines()[-1] == f"simulate: wrote {target}"
    assert target.read_bytes()[:8] == PNG


def test_ctrl_c_during_simulate_exits_130_with_one_line():
    """Ctrl-C once the study runs (its first progress line is the sign): status 130, one
    line, no traceback, the workers stopped.  The signal goes to the command alone: how
    workers still starting take a terminal's SIGINT to the group is simulation.py's."""
    child = subprocess.Popen(
        [*COMMAND, "simulate", "--clients", "150", "--runs", "80000", "--jobs", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # As from a terminal: a suite run in the background (`&` in a script) ignores
        # SIGINT, and Python keeps an ignored SIGINT ignored in its children.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert child.stderr.readline().startswith("simulate: ")  # running: a task is done
        child.send_signal(signal.SIGINT)
        _out, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 130
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == "python -m backoff_iter: interrupted"


# Ctrl-C at a chosen point: a sitecustomize module (on PYTHONPATH) that the command and its
# workers load once the interpreter has started, and that sends SIGINT when a module is
# first looked up (then, or some seconds after).  Before that, from exec to the end of
# `site`, the interpreter is on its own: nothing of ours runs yet.
SIGINT_HOOK = """
import os, signal, sys

AT = os.environ["SIGINT_AT"]  # a module's name; "site": at once, still in site; "exit"
AFTER = float(os.environ.get("SIGINT_AFTER", "0"))  # seconds after that
# or "worker": the first worker, to the whole group; "worker alone": each to itself
IN = os.environ.get("SIGINT_IN", "command")
ONCE = os.environ.get("SIGINT_ONCE", "")  # the file the one worker that sends creates


def send():
    if IN == "worker":
        try:
            os.close(os.open(ONCE, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return
        os.killpg(0, signal.SIGINT)  # as a terminal does: every process of the group
    else:  # the command, or a worker alone
        os.kill(os.getpid(), signal.SIGINT)


def later():
    if AFTER:
        import threading

        threading.Timer(AFTER, send).start()
    else:
        send()


class Finder:
    def find_spec(self, name, path=None, target=None):
        if name == AT:
            sys.meta_path.remove(self)
            later()
        return None


if ("--multiprocessing-fork" in sys.argv) == IN.startswith("worker"):
    if AT == "site":
        later()
    elif AT == "exit":  # the interpreter's exit: its atexit handlers
        import atexit

        atexit.register(later)
    else:
        sys.meta_path.insert(0, Finder())
"""


@pytest.fixture
def interrupted(tmp_path):
    """Start the command line with Ctrl-C at the point the hook's settings say: a Popen."""
    (tmp_path / "sitecustomize.py").write_text(SIGINT_HOOK)

    def start(args, command=COMMAND, measured=True, **settings):
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])
            ),
            "SIGINT_ONCE": str(tmp_path / "sent"),
            **{f"SIGINT_{key.upper()}": str(value) for key, value in settings.items()},
        }
        if not measured:  # no coverage in the command or its workers (see below)
            env.pop("COVERAGE_PROCESS_CONFIG", None)
            env.pop("COVERAGE_PROCESS_START", None)
        with suppress(FileNotFoundError):
            os.unlink(tmp_path / "sent")
        return subprocess.Popen(
            [*command, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,  # a group of its own: the test's process is not in it
            # As from a terminal: a suite run in the background ignores SIGINT, and
            # Python keeps an ignored SIGINT ignored in its children.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )

    return start


def finish(child):
    """The Ran of a command started by `interrupted`; its whole group killed if it hangs."""
    try:
        out, err = child.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        raise
    return Ran(child.returncode, out, err)


STUDY = ["simulate", "--clients", "150", "--runs", "80000", "--jobs", "2"]


@pytest.mark.parametrize(
    "at", ["site", "backoff_iter", "multiprocessing.pool", "backoff_iter.simulation"]
)
def test_ctrl_c_while_the_workers_start_is_one_line_from_the_command_alone(interrupted, at):
    """A terminal's Ctrl-C (to the whole group) while a worker still starts - its interpreter
    (site), the modules it imports before it can ignore SIGINT: status 130, the command's
    one line, and not a word from the workers (they once printed KeyboardInterrupt)."""
    # Not measured: under CI's coverage a worker that pool.terminate() stopped as it
    # started could survive it - coverage's SIGTERM handler, set up in the worker's
    # .pth, failed there ("Error processing line 1 of a1_coverage.pth"), site went on,
    # and the pool waited for the worker forever; with SIGTERM's default, as users run
    # it, the worker dies.  (The command's Ctrl-C path is measured by the test above.)
    status, _, err = finish(interrupted(STUDY, at=at, measured=False, **{"in": "worker"}))
    assert status == 130, err
    assert "Traceback" not in err and "Error" not in err, err
    assert err.strip().splitlines()[-1] == "python -m backoff_iter: interrupted"


def test_a_worker_interrupted_alone_while_it_starts_drops_it_and_works(interrupted):
    """SIGINT to a worker alone, while it starts (held until it ignores SIGINT): dropped;
    the study finishes, status 0, its figures those of one process."""
    args = ["--strategies", "exponential", "--clients", "6", "--runs", "40", "--seed", "3"]
    status, out, err = finish(
        interrupted(
            ["simulate", *args, "--jobs", "2", "--json"], at="site", **{"in": "worker alone"}
        )
    )
    assert status == 0, err
    assert "Traceback" not in err and "interrupted" not in err, err
    expected = simulate(["exponential"], clients=[6], runs=40, seed=3)
    assert strict_json(out) == [r._asdict() for r in expected]


# The two ways in: `python -m backoff_iter`, and what the backoff-iter script runs (pip's
# wrapper of the console script backoff_iter.__main__:script), each with the name its
# messages give it.
STARTS = {
    "python -m": COMMAND,
    "script": [
        sys.executable,
        "-c",
        "import sys; from backoff_iter.__main__ import script; sys.exit(script())",
    ],
}
NAMES = {"python -m": "python -m backoff_iter", "script": "backoff-iter"}


@pytest.mark.parametrize("start", list(STARTS))
@pytest.mark.parametrize(
    ("at", "args"),
    [
        ("backoff_iter.cli", ["show", "exponential"]),  # the first import run() guards
        ("argparse", ["show", "exponential"]),
        ("backoff_iter.overload", ["overload"]),  # imported by the command that runs only
        ("backoff_iter.cli._show", ["show", "exponential"]),
        ("backoff_iter.simulation", ["simulate"]),
        ("shutil", ["show", "exponential"]),  # imported by argparse as main() builds the parser
    ],
)
def test_ctrl_c_while_the_command_line_loads_is_one_line_and_130(interrupted, start, at, args):
    """Ctrl-C while the command line's modules import, before main() runs or as it builds
    its parser: status 130 and one line, no KeyboardInterrupt traceback."""
    result = finish(interrupted(args, STARTS[start], at=at))
    assert (result.status, result.out) == (130, ""), result.err
    assert result.err == f"{NAMES[start]}: interrupted\n"


@pytest.mark.parametrize("start", list(STARTS))
def test_ctrl_c_as_the_interpreter_exits_changes_nothing(interrupted, start):
    """Ctrl-C once the command is done, as the interpreter exits: status 0, nothing on
    stderr (no "Exception ignored in atexit callback" and its traceback)."""
    result = finish(interrupted(["show", "exponential", "-n", "3"], STARTS[start], at="exit"))
    assert (result.status, result.err, result.out.count("\n")) == (0, "", 4)


def test_ctrl_c_at_any_moment_of_a_short_run_is_130_or_done_never_a_traceback(interrupted):
    """Ctrl-C 0 to 0.5 s after the command line starts loading (20 moments, four runs side
    by side): each run ends interrupted (130, one line) or done (0, every row), and none
    prints a traceback."""
    args = ["show", "exponential", "-n", "10000"]
    moments = [0.025 * step for step in range(20)]
    for batch in range(0, len(moments), 4):
        children = {
            after: interrupted(args, at="backoff_iter.cli", after=after)
            for after in moments[batch : batch + 4]
        }
        for after, child in children.items():
            status, out, err = finish(child)
            assert "Traceback" not in err and "Exception" not in err, (after, err)
            if status == 130:
                assert err.splitlines()[-1] == "python -m backoff_iter: interrupted", (after, err)
            else:
                assert (status, err, out.count("\n")) == (0, "", 1 + 10_000), (after, err)


def test_ctrl_c_while_the_library_imports_is_one_line_and_130(interrupted):
    """Ctrl-C while the command imports the library's modules (show: the strategies)."""
    result = finish(interrupted(["show", "exponential"], at="backoff_iter.strategies"))
    assert (result.status, result.err) == (130, "python -m backoff_iter: interrupted\n")


@pytest.mark.parametrize("start", list(STARTS))
def test_usage_and_errors_name_the_way_the_command_line_was_started(start):
    """The backoff-iter script's usage, errors and help say backoff-iter; python -m's
    say python -m backoff_iter."""
    name = NAMES[start]
    bad = subprocess.run(
        [*STARTS[start], "show", "exponential", "--base", "-1"], capture_output=True, text=True
    )
    assert (bad.returncode, bad.stdout) == (2, ""), bad.stderr
    assert bad.stderr.splitlines()[-1].startswith(f"{name} show: error: "), bad.stderr
    shown = subprocess.run([*STARTS[start], "--help"], capture_output=True, text=True)
    assert shown.stdout.startswith(f"usage: {name} "), shown.stdout


def test_the_installed_script_runs_the_entry_point_that_names_it():
    """The installed console script runs script(), not run() (which says python -m)."""
    from importlib import metadata

    entries = metadata.distribution("backoff_iter").entry_points
    [script] = [e for e in entries if (e.group, e.name) == ("console_scripts", "backoff-iter")]
    assert script.value == "backoff_iter.__main__:script"


def test_the_entry_point_names_the_command_as_the_command_line_does():
    """run() says "interrupted" under main()'s name before it can import it."""
    from backoff_iter.__main__ import PROG as before
    from backoff_iter.cli._common import PROG

    assert before == PROG


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="POSIX signal masks")
def test_a_pool_that_cannot_start_lets_ctrl_c_through_again(monkeypatch):
    """SIGINT is held only while the workers start: a pool that fails to start (no more
    processes) raises its error and leaves SIGINT as it was."""
    import multiprocessing

    from backoff_iter import simulation

    class Refused:
        def Pool(self, *args, **options):
            assert signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])  # held now
            raise OSError(errno.EAGAIN, "Resource temporarily unavailable")

    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    monkeypatch.setattr(multiprocessing, "get_context", lambda method: Refused())
    with pytest.raises(OSError, match="temporarily unavailable"):
        simulation.simulate(["none"], clients=[2, 3], runs=1, jobs=2)
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before


def test_without_signal_masks_nothing_is_held(monkeypatch):
    """Where there are no signal masks (Windows), holding Ctrl-C is a no-op."""
    from backoff_iter import simulation

    monkeypatch.delattr(signal, "pthread_sigmask", raising=False)
    assert simulation._hold_ctrl_c()() is None


def test_progress_is_shown_every_2_seconds_and_on_a_terminal_every_tenth(capsys, monkeypatch):
    """Progress lines are spaced by the clock: 2 s apart in a log, 0.1 s on a terminal."""
    from backoff_iter.cli import _common

    now = [100.0]
    monkeypatch.setattr(_common.time, "perf_counter", lambda: now[0])
    progress = _common.Progress("simulate")
    for moment in (100.0, 101.0, 101.99, 102.0, 102.05, 104.5):
        now[0] = moment
        progress(f"at {moment}")
    shown = capsys.readouterr().err.splitlines()
    assert [line.split(" (")[0] for line in shown] == [
        "simulate: at 100.0",
        "simulate: at 102.0",
        "simulate: at 104.5",
    ]
    progress.terminal = True
    for moment in (200.0, 200.05, 200.15):
        now[0] = moment
        progress(f"at {moment}")
    assert capsys.readouterr().err.count("\rsimulate: at") == 2  # 200.0 and 200.15


def test_progress_is_one_line_on_a_terminal(cli, monkeypatch):
    """With stderr on a (real) terminal, progress rewrites one line (\\r), ending with 'done'."""
    import pty

    leader, follower = pty.openpty()
    terminal = os.fdopen(follower, "w")
    try:
        monkeypatch.setattr(sys, "stderr", terminal)
        result = cli("simulate", "--clients", "20", "--runs", "40", "--jobs", "1", "--json")
        terminal.close()
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
    assert result.status == 0
    assert shown.count("\rsimulate: ") >= 2  # the first progress, rewritten by "done"
    lines = [line for line in shown.replace("\r\n", "\n").split("\n") if line.strip()]
    assert len(lines) == 1 and "done in" in lines[0].split("\r")[-1]


# -- overload ----------------------------------------------------------------------------

STORM = ["--rate", "50", "--capacity", "60", "--seconds", "30"]


def test_overload_json_has_exactly_the_issues_keys_and_matches_python(cli):
    """--json: one object per pair, with exactly the agreed keys, as simulate_overload gives them."""
    args = ["--strategies", "full_jitter", "--budgets", "none,token_bucket", *STORM, "--seed", "4"]
    result = cli("overload", *args, "--json")
    assert result.status == 0, result.err
    runs = strict_json(result.out)
    assert [set(run) for run in runs] == [
        {
            "strategy",
            "budget",
            "clients",
            "budget_scope",
            "server",
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


def test_overload_table_has_a_row_per_pair_and_plots(cli, tmp_path):
    """The table's rows are each strategy x budget with its figures; --plot writes the picture."""
    target = tmp_path / "storm.png"
    args = ["--strategies", "none,decorrelated", "--budgets", "retry_budget", *STORM, "--seed", "1"]
    result = cli("overload", *args, "--plot", str(target))
    assert result.status == 0, result.err
    expected = simulate_overload(
        ["none", "decorrelated"], ["retry_budget"], rate=50, capacity=60, seconds=30, seed=1
    )
    rows = [line.split() for line in result.out.splitlines()[1:]]
    assert [row[:4] for row in rows] == [
        [run.strategy, run.budget, f"{run.requests:,}", f"{run.attempts:,}"] for run in expected
    ]
    assert target.read_bytes()[:8] == PNG


@pytest.fixture
def storm(monkeypatch):
    """The keyword arguments of each overload.simulate_overload call, which returns no runs."""
    from backoff_iter import overload

    calls = []

    @wraps(overload.simulate_overload)  # the same signature: the command line reads its defaults
    def record(*args, **options):
        calls.append(options)
        return []

    monkeypatch.setattr(overload, "simulate_overload", record)
    return calls


@pytest.mark.parametrize(
    "args, end, where",
    [
        (["--seconds", "15"], "25", "before the spike ends"),  # the defaults': 10 s from 10 s
        (["--seconds", "19.5"], "25", "before the spike ends"),
        (["--spike-at", "130"], "145", "before the spike starts"),  # after the run
        (["--seconds", "10"], "25", "before the spike starts"),  # the run ends as it starts
        (["--seconds", "30", "--spike-at", "25", "--spike-for", "10"], "40", "before the spike"),
        (["--seconds", "20"], "25", "0 s after the spike ends"),  # no time to recover
        (["--seconds", "24.5"], "25", "4.5 s after the spike ends"),
        # the latest spike a run can hold: it ends 5 s before the longest run does
        (["--rate", "1", "--seconds", "86000", "--spike-at", "86385"], "86400", "before the"),
    ],
)
def test_overload_refuses_a_run_that_ends_before_its_spike(cli, storm, args, end, where):
    """--seconds shorter than the spike's end and the 5 s its recovery is measured over
    (the table said "never" for a server that never failed): bad usage naming --seconds,
    --spike-at and --spike-for and the least --seconds that fits, before any work."""
    result = cli("overload", *args)
    assert result.status == 2
    line = one_error_line(result.err)
    assert "error: --seconds: " in line and "--spike-at" in line and "--spike-for" in line
    assert f"give --seconds {end} or more" in line and where in line, line
    assert storm == []


@pytest.mark.parametrize(
    "args",
    [
        ["--rate", "1", "--seconds", "86400", "--spike-at", "86399"],
        ["--spike-at", "1e308"],
        ["--rate", "1", "--seconds", "86400", "--spike-at", "86385", "--spike-for", "10.5"],
    ],
)
def test_a_spike_too_late_for_any_run_is_asked_to_move_not_for_more_seconds(cli, storm, args):
    """A spike ending past the longest run less its 5 s of recovery: no --seconds would do,
    so the error asks to move the spike to end by 86,395 s (it said "give --seconds 86414
    or more", past the 86,400 allowed, or "1e+308 or more")."""
    result = cli("overload", *args)
    assert result.status == 2
    line = one_error_line(result.err)
    assert "error: --seconds: " in line and "give --seconds" not in line, line
    assert "move the spike to end by 86395 s (a run lasts at most 86400 s)" in line, line
    assert storm == []


@pytest.mark.parametrize(
    "args, least",
    [
        (["--seconds", "4.5", "--spike", "1"], "5"),  # no spike: recovery from the start
        (["--seconds", "1", "--spike-for", "0"], "5"),
    ],
)
def test_overload_refuses_a_run_without_a_spike_too_short_to_recover_in(cli, storm, args, least):
    """No spike, and less than the 5 s recovery is measured over: bad usage naming --seconds."""
    result = cli("overload", *args)
    assert result.status == 2
    line = one_error_line(result.err)
    assert "error: --seconds: a run of " in line and f"give --seconds {least} or more" in line
    assert storm == []


def test_a_short_run_without_a_spike_says_how_long_its_goodput_is_of_and_recovers(cli):
    """A run of 8 s with no spike: the goodput column is of the last 8 s (the whole run),
    not "20 s", and a server that never failed recovered at once, not "never"."""
    light = ["--rate", "20", "--capacity", "1000", "--error-rate", "0", "--seed", "1"]
    result = cli("overload", "--seconds", "8", "--spike", "1", "--strategies", "none",
                 "--budgets", "none", *light)  # fmt: skip
    assert result.status == 0, result.err
    header, row = result.out.splitlines()
    assert "goodput last 8 s" in header and "20 s" not in header
    assert row.split()[-4:] == ["100.0%", "100.0%", "0", "s"]


@pytest.mark.parametrize(("seconds", "span"), [("25.5", "19.5"), ("40", "20"), ("30.25", "19.25")])
def test_the_goodput_column_says_the_seconds_its_buckets_hold(cli, seconds, span):
    """Goodput is of the last 20 whole-second buckets: a run of 25.5 s ends on a half
    bucket, so they hold 19.5 s (6 to 25.5), and the column's title says so."""
    light = ["--rate", "20", "--capacity", "1000", "--error-rate", "0", "--seed", "1"]
    result = cli("overload", "--seconds", seconds, "--strategies", "none",
                 "--budgets", "none", *light)  # fmt: skip
    assert result.status == 0, result.err
    assert f"goodput last {span} s" in result.out.splitlines()[0]


def test_overload_refuses_a_spike_ending_past_floats(cli, storm):
    """--spike-at 1e308 --spike-for 1e308: a spike after any run (it ran, saying "never")."""
    spike = ["--spike-at", "1e308", "--spike-for", "1e308", "--seconds", "5"]
    result = cli("overload", *spike)
    assert result.status == 2
    line = one_error_line(result.err)
    assert "error: --seconds: the spike ends past any run" in line and "--spike-at" in line
    assert storm == []


@pytest.mark.parametrize(
    "args",
    [
        ["--seconds", "25"],  # the run ends 5 s after the spike does
        ["--seconds", "7.3", "--spike-at", "0.1", "--spike-for", "2.2"],  # 5 s, as typed
        ["--seconds", "5", "--spike", "1"],  # no spike
        ["--seconds", "5", "--spike-for", "0"],
    ],
)
def test_overload_takes_a_run_that_holds_its_spike_or_has_none(cli, storm, args):
    """A run ending 5 s after its spike or later, or 5 s long without a spike, runs."""
    result = cli("overload", *args)
    assert result.status == 0, result.err
    assert storm[-1]["seconds"] == float(args[1])


@pytest.mark.parametrize(
    "args, option",
    [
        (["--spike-for", "-1"], "--spike-for"),
        (["--spike-at", "-1"], "--spike-at"),
        (["--spike-for", "inf"], "--spike-for"),
    ],
)
def test_a_bad_value_of_the_spike_is_named_for_itself_not_as_seconds(cli, args, option):
    """--seconds 5 with a negative or infinite spike: the library's error, naming the
    spike's option, not the run-shorter-than-its-spike one naming --seconds."""
    result = cli("overload", "--seconds", "5", *args)
    assert result.status == 2
    assert f"error: {option}: " in one_error_line(result.err)


# -- help, version, bad usage ---------------------------------------------------------------


def test_help_lists_each_command_and_the_exit_statuses(cli):
    """--help has a line per command, no reST markup, and the exit statuses; units in each help."""
    result = cli("--help")
    assert result.status == 0
    for command in ("show", "plan", "simulate", "overload"):
        assert any(line.split()[:1] == [command] for line in result.out.splitlines())
    assert "``" not in result.out
    text = " ".join(result.out.split())
    for status in ("0 success", "1 the output", "2 bad usage", "130 interrupted"):
        assert status in text
    assert "milliseconds" in cli("simulate", "--help").out
    assert "seconds" in cli("show", "--help").out


def test_each_commands_exit_statuses_name_a_picture_only_where_it_draws_one(cli):
    """A command's --help says what its status 1 means: a picture that
    could not be written only where the command draws one (--plot)."""
    for command in ("show", "plan", "simulate", "overload"):
        text = " ".join(cli(command, "--help").out.split())
        draws = "--plot" in text
        assert draws == (command != "plan")
        assert ("1 the output or a picture could not be written" in text) == draws, command
        assert ("1 the output could not be written" in text) == (not draws), command


@pytest.mark.parametrize("width", ["60", "80", "100"])
def test_help_never_breaks_a_name_across_lines(cli, monkeypatch, width):
    """Each command's help wraps between words: every name it lists (a strategy, a
    budget, a part) is whole on one line, the defaults' included."""
    from backoff_iter.overload import BUDGETS, PARTS

    known = {*strategies.STRATEGIES, *BUDGETS, *PARTS, "backoff_iter", "breaker+token_bucket"}
    monkeypatch.setenv("COLUMNS", width)
    for command in ("show", "plan", "simulate", "overload"):
        words = {word.strip("(),.;:[]") for word in cli(command, "--help").out.split()}
        assert {word for word in words if "_" in word} <= known, (command, width)


def test_version(cli):
    """--version prints the package version."""
    from backoff_iter import __version__

    assert cli("--version").out.strip() == f"backoff_iter {__version__}"


@pytest.mark.parametrize("args", [["--version"], ["-h"], ["show", "--help"]])
@pytest.mark.parametrize(
    "redirection, why", [(">&-", "stdout is closed"), (">/dev/full", "No space left")]
)
def test_help_and_version_that_cannot_be_written_are_status_1(args, redirection, why):
    """--version and --help into a closed stdout or a full disk: status 1 and one line saying
    why, as for any output (argparse alone says 0, or writes them on stderr)."""
    result = with_fds(redirection, *args, env=BUFFERED)
    assert result.returncode == 1
    assert why in one_error_line(result.stderr)
    assert result.stdout == ""


@pytest.mark.parametrize(
    "args, named",
    [
        (["show", "nope"], "STRATEGY"),
        (["show", "exponential", "--base", "-1"], "--base"),
        (["show", "constant", "--base", "-1"], "--base"),  # constant's `delay`
        (["show", "exponential", "--base", "x"], "--base"),
        (["show", "exponential", "--factor", "0.5"], "--factor"),
        (["show", "constant", "--base", "nan"], "--base"),
        (["show", "fibonacci", "--factor", "2"], "--factor"),
        (["show", "full_jitter", "--seed", "x"], "--seed"),
        (["show", "exponential", "-n", "0"], "-n"),
        (["show", "exponential", "--until-elapsed", "-1"], "--until-elapsed"),
        (["show", "exponential", "--until-elapsed", "nan"], "--until-elapsed"),
        (["show", "full_jitter", "--plot", "out.svg"], "--plot"),
        (["plan", "--base", "1", "--factor", "2"], "--elapsed"),
        (["plan", "--base", "-1", "--factor", "2", "--elapsed", "3"], "--base"),
        (["plan", "--base", "1", "--factor", "2", "--elapsed", "inf"], "--elapsed"),
        (["plan", "--base", "1", "--ratio", "-1", "--elapsed", "3"], "--ratio"),
        (
            ["plan", "--base", "1", "--factor", "2", "--elapsed", "3", "--compare", "0.5"],
            "--compare",
        ),
        (["simulate", "--strategies", "nope"], "--strategies"),
        (["simulate", "--strategies", "exponential,,none"], "--strategies"),
        (["simulate", "--clients", "0"], "--clients"),
        (["simulate", "--clients", ","], "--clients"),
        (["simulate", "--clients", "10,,20"], "--clients"),
        (["simulate", "--clients", "10,"], "--clients"),
        (["simulate", "--runs", "-3"], "--runs"),
        (["simulate", "--cap", "-1"], "--cap"),
        (["simulate", "--base", "1e308"], "--base"),
        (["simulate", "--jobs", "0"], "--jobs"),
        (["overload", "--budgets", "gold"], "--budgets"),
        (["overload", "--rate", "0"], "--rate"),
        (["overload", "--spike", "0.5"], "--spike"),
        (["overload", "--spike-for", "-1"], "--spike-for"),
        (["overload", "--rate", "1e-9", "--retries", "5000000"], "--retries"),
        ([], "show, plan, simulate"),
    ],
)
def test_bad_input_is_one_line_naming_the_option_and_exit_status_2(cli, args, named):
    """Unknown names, empty items, bad numbers, out-of-range values: one error line naming
    the option, status 2."""
    result = cli(*args)
    assert result.status == 2
    line = one_error_line(result.err)
    assert named in line
    assert line.startswith(" ".join(["python -m backoff_iter", *args[:1]]) + ": error: ")
    assert "_number" not in result.err and "new_factor" not in result.err


@pytest.mark.parametrize(
    "args, said",
    [
        (["show", "exponential", "--base", "-1e3"], "got -1000.0"),
        (["show", "exponential", "--cap", "-inf"], "got -inf"),
        (["show", "exponential", "--cap", "-Infinity"], "got -inf"),
        (["show", "exponential", "--base", "-.5"], "got -0.5"),
        (["plan", "--base", "1", "--factor", "2", "--elapsed", "-1e-3"], "got -0.001"),
        (["overload", "--seed", "-1e3"], "got '-1e3'"),
        (["show", "exponential", "--base", "-1e3x"], "--base"),  # no number: said so
        (["show", "exponential", "--cap", "-NaN"], "--cap"),  # (-nan is show's -n an)
    ],
)
def test_a_negative_number_in_any_form_is_a_value_refused_as_itself(cli, args, said):
    """-1e3, -inf, -.5 after an option are its value, refused for what it is (argparse
    took -1e3 and -inf for options: "argument --base: expected one argument")."""
    result = cli(*args)
    assert result.status == 2
    line = one_error_line(result.err)
    assert said in line and "expected one argument" not in line, line


@pytest.mark.parametrize(
    "args",
    [
        ["simulate", "--clients", "10,,20"],
        ["simulate", "--clients", "10,"],
        ["simulate", "--strategies", "exponential,,none"],
        ["overload", "--budgets", ",none"],
    ],
)
def test_an_empty_item_in_a_list_is_refused_as_such(cli, args):
    """`10,,20` is not 10 and 20: bad usage, the error saying an item is empty."""
    result = cli(*args)
    assert result.status == 2
    line = one_error_line(result.err)
    assert args[1] in line and "empty" in line


@pytest.mark.parametrize(
    "args, named",
    [
        (["show", "full_jitter", "--seed", "x" * 5000], "--seed"),
        (["show", "full_jitter", "--seed=" + "7" * 4000 + "x"], "--seed"),
        (["show", "x" * 5000], "STRATEGY"),
        (["show", "exponential", "z" * 5000], "unrecognized"),
        (["simulate", "--strategies", "exponential," + "y" * 5000], "--strategies"),
        (["simulate", "--clients", "10," + "9" * 3000 + "x"], "--clients"),
        (["overload", "--budgets", "none," + "gold " * 1000], "--budgets"),
        (["show", "exponential", "--plot", "p" * 5000 + ".jpg"], "--plot"),
        # numbers worked out from a value typed: the attempts grouped, the study's cost
        (["show", "exponential", "--plot", "x.png", "-n", str(10**4000)], "-n"),
        (["simulate", "--runs", str(10**4000)], "--runs"),
    ],
)
def test_a_long_value_in_an_error_is_cut_to_its_ends_and_its_length(cli, args, named):
    """A value of thousands of characters is not echoed whole: the error line shows its
    first and last characters and its length (argparse's, our and the library's messages),
    nor a number worked out from it (a line of 5,416 characters)."""
    result = cli(*args)
    assert result.status == 2
    line = one_error_line(result.err)
    assert named in line and len(line) < 400 and " characters)" in line, line


def test_a_seed_of_more_digits_than_python_converts_says_so(cli):
    """A 5,000-digit --seed is a whole number, refused for its length (Python converts at
    most sys.get_int_max_str_digits() digits), not echoed whole."""
    limit = getattr(sys, "get_int_max_str_digits", lambda: 0)()
    if not limit:
        pytest.skip("this Python converts integers of any length")
    result = cli("show", "full_jitter", "--seed", "1" * (limit + 700))
    assert result.status == 2
    line = one_error_line(result.err)
    assert f"--seed: expected at most {limit:,} digits, got {limit + 700:,}" in line


@pytest.mark.parametrize("typed", ["1e400", "-1e999", " 2E+309"])
def test_a_number_beyond_floats_is_refused_as_typed_and_inf_is_not(cli, typed):
    """--base 1e400 is refused naming what was typed (it said "base must be finite, got
    inf"); inf, written so, is still a number where an option takes one (a cap)."""
    result = cli("show", "exponential", f"--base={typed}")
    assert result.status == 2
    line = one_error_line(result.err)
    assert "--base: expected a number within floats" in line and repr(typed) in line, line
    assert cli("show", "exponential", f"--cap={typed}").status == 2
    assert cli("show", "exponential", "--base", "1", "--cap", "inf", "-n", "2").status == 0
    assert cli("show", "exponential", "--base", "1", "--cap", "Infinity", "-n", "2").status == 0


@pytest.mark.parametrize("typed", ["1e-400", "-1e-999", " 2E-330"])
def test_a_number_too_small_for_floats_is_refused_as_typed_and_zero_is_not(cli, typed):
    """plan --base 1e-400 is refused naming what was typed (it said "base must be greater
    than 0, got 0.0"; show took it as 0); a zero, however written, is still 0."""
    result = cli("plan", f"--base={typed}", "--factor", "2", "--elapsed", "1")
    assert result.status == 2
    line = one_error_line(result.err)
    assert "--base: expected a number within floats" in line and repr(typed) in line, line
    assert cli("show", "exponential", f"--cap={typed}").status == 2
    assert cli("show", "exponential", "--cap", "0e-400", "-n", "2").status == 0
    assert cli("show", "exponential", "--cap", "-0.000", "-n", "2").status == 0


def test_the_base_of_simulate_is_named_as_typed(cli):
    """simulate --base 1e308 speaks of the 1e308 typed, not of the doubled inf."""
    result = cli("simulate", "--base", "1e308")
    assert "1e+308" in result.err and "inf" not in result.err


@pytest.mark.parametrize(
    "parameter, option", [("spike_at", "--spike-at"), ("rng", "--seed"), ("delay", "--base")]
)
def test_the_option_named_comes_from_the_errors_parameter_not_its_message(
    cli, monkeypatch, parameter, option
):
    """An argument error's .parameter picks the option, whatever its message says."""
    from backoff_iter import overload

    @wraps(overload.simulate_overload)  # the same signature: the command line reads its defaults
    def refuse(*args, **options):
        raise ArgumentValueError(parameter, "a message naming nothing")

    monkeypatch.setattr(overload, "simulate_overload", refuse)
    result = cli("overload")
    assert result.status == 2
    assert one_error_line(result.err).endswith(f"error: {option}: a message naming nothing")


def test_huge_seconds_print_in_six_digits_not_three_hundred(cli):
    """A sleep near the largest float is 1e+300 in show's table and plan's lines."""
    result = cli("show", "exponential", "--base", "1e300", "-n", "2")
    assert result.out.splitlines()[1:] == [
        "      0        1e+300          1e+300",
        "      1        2e+300          3e+300",
    ]
    result = cli("plan", "--base", "1e308", "--factor", "1e308", "--elapsed", "1e308")
    assert "  slept:        1e+308" in result.out.splitlines()
    assert max(len(line) for line in result.out.splitlines()) < 60


def test_show_refuses_json_with_plot_rather_than_dropping_it(cli, tmp_path):
    """show --plot draws instead of printing: asked for JSON too, it says so (status 2)."""
    target = tmp_path / "x.png"
    result = cli("show", "exponential", "-n", "3", "--plot", str(target), "--json")
    assert result.status == 2 and "--json" in result.err and "choose one" in result.err
    assert result.out == "" and not target.exists()


@pytest.mark.parametrize("output", [[], ["--json"]])
def test_show_refuses_samples_without_a_plot_rather_than_ignoring_it(cli, output):
    """--samples is --plot's: without it, bad usage naming both, and no rows."""
    result = cli("show", "full_jitter", "--samples", "50", *output)
    assert result.status == 2 and result.out == ""
    line = one_error_line(result.err)
    assert "error: --samples: " in line and "--plot" in line


@pytest.mark.parametrize("strategy", ["exponential", "constant", "fibonacci"])
def test_show_refuses_samples_for_a_strategy_without_jitter(cli, tmp_path, strategy):
    """A strategy with no jitter has one schedule to draw: --samples is bad usage naming it,
    and nothing is drawn (it was ignored, with status 0)."""
    target = tmp_path / "x.png"
    result = cli("show", strategy, "--samples", "5", "--plot", str(target))
    assert result.status == 2 and not target.exists()
    line = one_error_line(result.err)
    assert "error: --samples: " in line and f"{strategy} has no jitter" in line


def test_show_plot_samples_a_thousand_schedules_unless_told(cli, tmp_path, drawn):
    """A jittered picture samples 1000 schedules by default, --samples K if given."""
    from backoff_iter.cli._show import SAMPLES

    target = str(tmp_path / "x.png")
    cli("show", "full_jitter", "-n", "5", "--plot", target)
    cli("show", "full_jitter", "-n", "5", "--samples", "7", "--plot", target)
    assert [len(schedules) for _, schedules, _ in drawn] == [SAMPLES, 7] == [1000, 7]
    assert f"({SAMPLES};" in cli("show", "--help").out


def test_plan_counts_one_retry_in_the_singular(cli):
    """--compare's line says "1 retry" and "0 retries", never "1 retries"."""
    args = ["plan", "--base", "1", "--factor", "2", "--compare", "3"]
    one = cli(*args, "--elapsed", "1").out.splitlines()[-1]
    assert ": 1 retry (exactly" in one
    none = cli(*args, "--elapsed", "0.5").out.splitlines()[-1]
    assert ": 0 retries (exactly" in none


def test_a_bound_on_samples_of_one_attempt_says_attempt(cli, tmp_path):
    """The --samples bound for one attempt drawn: "schedules of 1 attempt"."""
    from backoff_iter.cli._show import SAMPLED_AT_MOST

    args = ["show", "full_jitter", "-n", "1", "--samples", str(SAMPLED_AT_MOST + 1)]
    line = one_error_line(cli(*args, "--plot", str(tmp_path / "x.png")).err)
    assert f"{SAMPLED_AT_MOST + 1:,} schedules of 1 attempt are" in line


def test_simulate_progress_counts_one_run_in_the_singular(cli):
    """A study of one run: "1/1 run"."""
    result = cli("simulate", "--strategies", "none", "--clients", "2", "--runs", "1", "--json")
    assert result.status == 0, result.err
    assert result.err.splitlines()[0].startswith("simulate: 1/1 run (")


@pytest.fixture
def titles(monkeypatch):
    """The title of each picture saved."""
    from matplotlib import pyplot

    saved = []
    real = pyplot.Figure.savefig

    def keep(figure, *args, **kwargs):
        saved.append(figure._suptitle.get_text())
        return real(figure, *args, **kwargs)

    monkeypatch.setattr(pyplot.Figure, "savefig", keep)
    return saved


def test_pictures_count_one_run_and_one_retry_in_the_singular(cli, tmp_path, titles):
    """The titles of simulate's and overload's pictures: "1 run per point", "1 retry"."""
    study = ["--strategies", "none", "--clients", "2", "--runs", "1", "--json"]
    assert cli("simulate", *study, "--plot", str(tmp_path / "s.png")).status == 0
    storm = ["--strategies", "none", "--budgets", "none", *STORM, "--json"]
    for retries in ("1", "2"):
        args = [*storm, "--retries", retries, "--plot", str(tmp_path / "o.png")]
        assert cli("overload", *args).status == 0
    assert "AWS contention study: 1 run per point," in titles[0]
    assert ", 1 retry, " in titles[1] and ", 2 retries, " in titles[2]


def test_show_plot_bounds_the_sleeps_it_samples(cli, tmp_path):
    """--samples times the attempts drawn is bounded: a clear usage error, not gigabytes."""
    from backoff_iter.cli._show import SAMPLED_AT_MOST

    target = tmp_path / "x.png"
    samples = SAMPLED_AT_MOST // 1000 + 1
    result = cli(
        "show", "full_jitter", "-n", "1000", "--samples", str(samples), "--plot", str(target)
    )
    assert result.status == 2 and "--samples" in result.err and f"{SAMPLED_AT_MOST:,}" in result.err
    assert not target.exists()


def test_choices_that_are_not_strings_are_listed_and_offered_as_they_are():
    """Number choices (a parser of the CLI's kind, none of its commands has one yet): listed
    and offered as numbers, as argparse lists them, not as quoted strings."""
    from backoff_iter.cli._common import ParseError, Parser

    parser = Parser(prog="x")
    parser.add_argument("--n", type=int, choices=[1, 2, 30])
    expected = r"invalid choice: 3 \(choose from 1, 2, 30\); did you mean 30\?"
    with pytest.raises(ParseError, match=expected):
        parser.parse_args(["--n", "3"])


def test_an_unknown_option_before_the_command_is_the_only_one_named(cli):
    """--bogus before `show`: the command is still the first word that is no option, so
    its own arguments parse and the error names --bogus alone (taking --bogus for the
    command left `show` without options: "unrecognized arguments: --bogus exponential -n 2")."""
    result = cli("--bogus", "show", "exponential", "-n", "2")
    assert result.status == 2
    assert one_error_line(result.err).endswith("error: unrecognized arguments: --bogus")
