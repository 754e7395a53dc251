"""``python -m backoff_iter``: a thin front end to the library.

Choices and defaults come from the library (the strategies' signatures,
the simulators' defaults); this module parses, prints and draws.  Exit
status: 0 on success, 2 on bad usage, 130 on Ctrl-C; a closed output pipe
ends quietly.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from itertools import count
from random import Random
from typing import Any, NoReturn

from . import __version__, _checks, overload, planning, simulation, strategies

DESCRIPTION = "Backoff schedules as iterables: show one, plan one, or simulate clients using them."

# What each strategy parameter means, with its unit, for the help of `show`.
_MEANINGS = {
    "base": "first delay, seconds",
    "factor": "growth factor per attempt (a number, no unit)",
    "step": "linear's growth per attempt, seconds",
    "cap": "largest delay, seconds",
    "rng": "seed of the random draws (jittered strategies), an integer",
}


class _Parser(argparse.ArgumentParser):
    """argparse, but an error is one line (no usage block) and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if math.isnan(value):
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}")
    return value


def _whole(minimum: int) -> Callable[[str], int]:
    def whole(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        try:
            return _checks.count("value", value, minimum=minimum)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {text}") from None

    return whole


def _names(choices: Sequence[str]) -> Callable[[str], list[str]]:
    def names(text: str) -> list[str]:
        picked = [name.strip() for name in text.split(",") if name.strip()]
        unknown = [name for name in picked if name not in choices]
        if unknown or not picked:
            raise argparse.ArgumentTypeError(
                f"unknown name {', '.join(unknown) or repr(text)} (choose from {', '.join(choices)})"
            )
        return picked

    return names


def _counts(text: str) -> list[int]:
    parts = [part for part in text.split(",") if part.strip()]
    if not parts:
        raise argparse.ArgumentTypeError(f"expected comma-separated counts, got {text!r}")
    return [_whole(1)(part) for part in parts]


def _plot_path(text: str) -> str:
    """Check a --plot path before any work: a .png in a directory that exists."""
    if not text.lower().endswith(".png"):
        raise argparse.ArgumentTypeError(f"must name a .png file, got {text!r}")
    folder = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        raise argparse.ArgumentTypeError(f"cannot write into {folder!r}")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise argparse.ArgumentTypeError(
            "needs matplotlib: pip install 'backoff_iter[plot]'"
        ) from None
    return text


def _default(function: Callable[..., Any], parameter: str) -> Any:
    """A library function's default for *parameter*: defaults live in one place."""
    import inspect

    return inspect.signature(function).parameters[parameter].default


def _parser() -> _Parser:
    parser = _Parser(prog="python -m backoff_iter", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"backoff_iter {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def command(name: str, summary: str, run: Callable[[argparse.Namespace], None]) -> _Parser:
        sub = commands.add_parser(name, help=summary, description=summary)
        sub.set_defaults(run=run, parser=sub)
        return sub

    show = command(
        "show", "Print a strategy's delays and the time slept so far, as they come.", _show
    )
    show.add_argument(
        "strategy",
        choices=list(strategies.STRATEGIES),
        metavar="STRATEGY",
        help="one of: " + ", ".join(strategies.STRATEGIES),
    )
    for parameter, option in _strategy_options().items():
        kind = int if parameter == "rng" else _number
        show.add_argument(
            option, type=kind, dest=parameter, help=_MEANINGS.get(parameter, "seconds")
        )
    show.add_argument(
        "-n",
        type=_whole(1),
        metavar="N",
        help="delays to show (10 unless --until-elapsed is given)",
    )
    show.add_argument(
        "--until-elapsed",
        type=_number,
        metavar="T",
        help="stop once the time slept reaches T seconds",
    )
    show.add_argument("--json", action="store_true", help="print the rows as a JSON array")
    show.add_argument(
        "--plot",
        type=_plot_path,
        metavar="FILE.png",
        help="draw the delays and the time slept, sampled many times if jittered",
    )
    show.add_argument(
        "--samples",
        type=_whole(2),
        default=1000,
        metavar="K",
        help="schedules sampled for --plot of a jittered strategy (1000)",
    )

    plan = command(
        "plan", "Derive a geometric schedule (first sleep, factor) from what you want.", _plan
    )
    plan.add_argument("--base", type=_number, required=True, help="first sleep a, seconds")
    how = plan.add_mutually_exclusive_group(required=True)
    how.add_argument("--factor", type=_number, help="the factor r (a number >= 1)")
    how.add_argument(
        "--ratio",
        type=_number,
        help="each sleep as a share of the time already slept: r = 1 + ratio",
    )
    plan.add_argument("--elapsed", type=_number, required=True, help="elapsed time T, seconds")
    plan.add_argument(
        "--compare",
        type=_number,
        metavar="FACTOR",
        help="another factor: its retry count over the same time",
    )
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")

    study = simulation.simulate
    simulate = command(
        "simulate", "Rerun the AWS contention study: N clients, one row, backing off.", _simulate
    )
    simulate.add_argument(
        "--strategies",
        type=_names(list(simulation.STRATEGIES)),
        default=list(simulation.DEFAULT_STRATEGIES),
        metavar="NAMES",
        help="comma-separated, from: " + ", ".join(simulation.STRATEGIES),
    )
    simulate.add_argument(
        "--clients",
        type=_counts,
        default=list(simulation.DEFAULT_CLIENTS),
        metavar="COUNTS",
        help="comma-separated client counts (10,20,...,190)",
    )
    simulate.add_argument(
        "--runs",
        type=_whole(1),
        default=_default(study, "runs"),
        help=f"runs to average per cell ({_default(study, 'runs')})",
    )
    simulate.add_argument("--seed", type=int, help="make the study repeatable (an integer)")
    simulate.add_argument(
        "--base",
        type=_number,
        default=_default(study, "base"),
        help=f"base, milliseconds ({_default(study, 'base'):g})",
    )
    simulate.add_argument(
        "--cap",
        type=_number,
        default=_default(study, "cap"),
        help=f"cap, milliseconds ({_default(study, 'cap'):g})",
    )
    simulate.add_argument(
        "--jobs",
        type=_whole(1),
        default=os.cpu_count() or 1,
        help="processes to run the cells on (all cores: %(default)s)",
    )
    simulate.add_argument("--json", action="store_true", help="print the results as JSON")
    simulate.add_argument(
        "--plot", type=_plot_path, metavar="FILE.png", help="draw work and time against clients"
    )

    storm = overload.simulate_overload
    overloaded = command(
        "overload", "Simulate a retry storm second by second, with and without budgets.", _overload
    )
    overloaded.add_argument(
        "--strategies",
        type=_names(["none", *strategies.STRATEGIES]),
        default=list(_default(storm, "strategies")),
        metavar="NAMES",
        help="comma-separated: none (no retries), " + ", ".join(strategies.STRATEGIES),
    )
    overloaded.add_argument(
        "--budgets",
        type=_names(list(overload.BUDGETS)),
        default=list(_default(storm, "budgets")),
        metavar="NAMES",
        help="comma-separated, each run with its own shared one: " + ", ".join(overload.BUDGETS),
    )
    for option, meaning in (
        ("rate", "requests arriving per second"),
        ("capacity", "attempts the server serves per second"),
        ("spike", "the rate's multiplier during the spike"),
        ("spike_at", "when the spike starts, seconds"),
        ("spike_for", "how long the spike lasts, seconds"),
        ("timeout", "how long a client waits for an answer, seconds"),
        ("error_rate", "chance of a transient error per attempt"),
        ("base", "the strategy's base, seconds"),
        ("cap", "the strategy's cap, seconds"),
        ("seconds", "how long requests arrive, seconds"),
    ):
        default = _default(storm, option)
        overloaded.add_argument(
            f"--{option.replace('_', '-')}",
            type=_number,
            default=default,
            help=f"{meaning} ({default:g})",
        )
    overloaded.add_argument(
        "--retries",
        type=_whole(0),
        default=_default(storm, "retries"),
        help="retries per request at most (%(default)s)",
    )
    overloaded.add_argument("--seed", type=int, help="make the runs repeatable (an integer)")
    overloaded.add_argument("--json", action="store_true", help="print the runs as JSON")
    overloaded.add_argument(
        "--plot",
        type=_plot_path,
        metavar="FILE.png",
        help="draw goodput and attempts per second, the spike shaded",
    )
    return parser


# -- output ---------------------------------------------------------------------


def _strict(value: Any) -> Any:
    """*value* made RFC 8259 JSON: an infinite (or NaN) number becomes null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _strict(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(item) for item in value]
    return value


def _json(value: Any) -> str:
    return json.dumps(_strict(value), allow_nan=False)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows)]
    return "\n".join(
        "  ".join(cell.rjust(w) for cell, w in zip(line, widths)) for line in (header, *rows)
    )


class _Progress:
    """Progress on stderr: one line rewritten on a terminal, plain lines otherwise."""

    def __init__(self, command: str) -> None:
        self.command = command
        self.started = time.perf_counter()
        self.terminal = sys.stderr.isatty()
        self.shown = -math.inf

    def __call__(self, text: str) -> None:
        now = time.perf_counter()
        if now - self.shown < (0.1 if self.terminal else 2.0):
            return
        self.shown = now
        line = f"{self.command}: {text} ({now - self.started:.1f} s)"
        if self.terminal:
            print(f"\r{line}\033[K", end="", file=sys.stderr, flush=True)
        else:
            print(line, file=sys.stderr, flush=True)

    def done(self) -> None:
        line = f"{self.command}: done in {time.perf_counter() - self.started:.1f} s"
        print(f"\r{line}\033[K" if self.terminal else line, file=sys.stderr, flush=True)


# -- the commands ----------------------------------------------------------------


def _strategy_options() -> dict[str, str]:
    """Every parameter of any strategy, and the option of `show` that gives it."""
    parameters = (p for name in strategies.STRATEGIES for p in strategies.parameters(name))
    return {p: "--seed" if p == "rng" else f"--{p}" for p in parameters}


def _options(args: argparse.Namespace) -> dict[str, Any]:
    """The strategy options the user gave, checked against what the strategy takes."""
    taken = strategies.parameters(args.strategy)
    given = {}
    for parameter, option in _strategy_options().items():
        value = getattr(args, parameter)
        if value is None:
            continue
        if parameter not in taken:
            args.parser.error(f"{args.strategy} takes no {option}")
        given[parameter] = Random(value) if parameter == "rng" else value
    return given


def _show(args: argparse.Namespace) -> None:
    options = _options(args)
    delays = strategies.make(args.strategy, **options)  # checks them: bad usage if wrong
    until = args.until_elapsed
    if until is not None and until < 0:
        args.parser.error(f"--until-elapsed must be at least 0, got {until:g}")
    # -n, else as many as --until-elapsed takes, else 10
    limit = args.n if args.n is not None else None if until is not None else 10
    if args.plot:
        _pictures().show(args.plot, args.strategy, options, limit, until, args.samples)
        return
    rows = _rows(delays, limit, until)
    write = sys.stdout.write
    if args.json:  # streamed: one row per line, constant memory
        write("[")
        for index, (attempt, sleep, slept) in enumerate(rows):
            write(
                ("" if index == 0 else ",\n")
                + _json({"attempt": attempt, "sleep": sleep, "elapsed": slept})
            )
        write("]\n")
        return
    write(f"{'attempt':>7}  {'sleep':>12}  {'elapsed':>14}\n")
    for attempt, sleep, slept in rows:
        write(f"{attempt:>7}  {sleep:>12.3f}  {slept:>14.3f}\n")


def _rows(
    delays: Iterator[float], limit: int | None, until: float | None
) -> Iterator[tuple[int, float, float]]:
    """(attempt, sleep, time slept) for *limit* delays, or until the time slept reaches *until*."""
    slept = 0.0
    for attempt, sleep in zip(count() if limit is None else range(limit), delays):
        slept += sleep
        yield attempt, sleep, slept
        if until is not None and slept >= until:
            return


def _plan(args: argparse.Namespace) -> None:
    factor = args.factor if args.ratio is None else planning.factor_for_ratio(args.ratio)
    result = planning.plan(args.base, factor, args.elapsed)
    report: dict[str, Any] = {"base": args.base, "factor": factor}
    if args.ratio is not None:
        report["ratio"] = args.ratio
    report.update(
        {
            "elapsed": args.elapsed,
            "retries": result.retries,
            "exact": result.exact,
            "slept": result.elapsed,
            "sleep_before": result.sleep_before,
            "sleep_after": result.sleep_after,
        }
    )
    if args.compare is not None:
        try:
            other = planning.plan(args.base, args.compare, args.elapsed)
            # factor 1 is linear: no long-run ratio of logarithms (null in JSON)
            ratio = planning.retry_count_ratio(factor, args.compare) if factor > 1 else None
        except _checks.ArgumentValueError as error:  # about the other factor: --compare's
            message = str(error).partition(" ")[2]
            raise _checks.ArgumentValueError("new_factor", f"new_factor {message}") from None
        report["compare"] = {
            "factor": args.compare,
            "retries": other.retries,
            "exact": other.exact,
            "ratio": ratio,
        }
    if args.json:
        print(_json(report))
        return
    before = "none" if result.sleep_before is None else f"{result.sleep_before:.3f}"
    print(f"base {args.base:g}, factor {factor:g}: by elapsed {args.elapsed:g}")
    print(f"  retries:      {result.retries} (exactly {result.exact:.3f})")
    print(f"  slept:        {result.elapsed:.3f}")
    print(f"  sleep before: {before}")
    print(f"  sleep after:  {result.sleep_after:.3f}")
    if args.compare is not None:
        compare = report["compare"]
        line = (
            f"factor {args.compare:g} over the same time: {compare['retries']} retries"
            f" (exactly {compare['exact']:.3f})"
        )
        if compare["ratio"] is not None:
            line += (
                f"; in the long run log {factor:g} / log {args.compare:g}"
                f" = {compare['ratio']:.3f} times as many"
            )
        print(line)


def _simulate(args: argparse.Namespace) -> None:
    progress = _Progress("simulate")
    results = simulation.simulate(
        args.strategies,
        args.clients,
        args.runs,
        seed=args.seed,
        base=args.base,
        cap=args.cap,
        jobs=args.jobs,
        progress=lambda done, total: progress(f"{done:,}/{total:,} runs"),
    )
    progress.done()
    if args.json:
        print(_json([r._asdict() for r in results]))
    else:
        for name in dict.fromkeys(r.strategy for r in results):
            rows = [
                [str(r.clients), f"{r.work:.1f}", f"{r.time:.1f}"]
                for r in results
                if r.strategy == name
            ]
            print(name)
            print(_table(["clients", "work", "time (ms)"], rows))
            print()
    if args.plot:
        _pictures().simulation(args.plot, results, args)


def _overload(args: argparse.Namespace) -> None:
    progress = _Progress("overload")
    runs = overload.simulate_overload(
        args.strategies,
        args.budgets,
        rate=args.rate,
        capacity=args.capacity,
        spike=args.spike,
        spike_at=args.spike_at,
        spike_for=args.spike_for,
        timeout=args.timeout,
        error_rate=args.error_rate,
        retries=args.retries,
        base=args.base,
        cap=args.cap,
        seconds=args.seconds,
        seed=args.seed,
        progress=lambda strategy, budget, share: progress(f"{strategy} / {budget}: {share:.0%}"),
    )
    progress.done()
    if args.json:
        print(_json([run._asdict() for run in runs]))
    else:
        rows = [
            [
                run.strategy,
                run.budget,
                f"{run.requests:,}",
                f"{run.attempts:,}",
                f"{run.amplification:.2f}",
                f"{run.succeeded:.1%}",
                f"{run.goodput_last_20s:.1%}",
                "never" if run.recovery_seconds is None else f"{run.recovery_seconds:g} s",
            ]
            for run in runs
        ]
        print(
            _table(
                [
                    "strategy",
                    "budget",
                    "requests",
                    "attempts",
                    "amplification",
                    "succeeded",
                    "goodput last 20 s",
                    "recovery",
                ],
                rows,
            )
        )
    if args.plot:
        _pictures().overload(args.plot, runs, args)


def _pictures() -> Any:
    from . import _pictures

    return _pictures


# -- the exits ---------------------------------------------------------------------

# Library parameter names that the command line spells differently.
_OPTIONS = {"new_factor": "--compare", "delay": "--base", "rng": "--seed", "sleeps": "-n"}


def _as_option(error: _checks.ArgumentValueError | _checks.ArgumentTypeError) -> str:
    """A library error names its parameter; say it as the option the user typed."""
    name, message = error.parameter, str(error)
    option = _OPTIONS.get(name, "--" + name.replace("_", "-"))
    if message.startswith(name + " "):
        return option + message[len(name) :]
    return f"{option}: {message}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.error("choose a command: show, plan, simulate or overload (see --help)")
        try:
            args.run(args)
        except (
            _checks.ArgumentValueError,
            _checks.ArgumentTypeError,
        ) as error:  # our argument checks
            args.parser.error(_as_option(error))
        sys.stdout.flush()
    except KeyboardInterrupt:
        end_progress = "\n" if sys.stderr.isatty() else ""  # a progress line may be open
        print(f"{end_progress}{parser.prog}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader has gone (`| head`): stop quietly, and let the exit not
        # complain about the stdout it can no longer flush.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    return 0
