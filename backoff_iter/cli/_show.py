"""``show``: a strategy's delays and the time slept, as a table, JSON or a picture."""

from __future__ import annotations

import argparse
import inspect
from collections import Counter
from collections.abc import Iterator
from functools import cache
from itertools import islice
from random import Random
from typing import Any

from backoff_iter import strategies

from ._common import (
    UsageError,
    decimal,
    integer,
    number,
    option,
    picture,
    plot_path,
    plural,
    say,
    to_json,
    whole,
    write,
)

NAME = "show"
SUMMARY = "Print a strategy's delays and the time slept so far, as they come."

ROWS = 10  # rows shown when neither -n nor --until-elapsed says
UNTIL_AT_MOST = 10_000  # rows --until-elapsed shows at most, unless -n says
DRAWN_AT_MOST = 1_000  # attempts a picture draws at most
SAMPLED_AT_MOST = 2_000_000  # sleeps a picture samples in all: some 100 MB, seconds to draw
SAMPLES = 1000  # schedules a picture of a jittered strategy samples unless --samples says

# What each strategy parameter means, with its unit; the defaults come from the signatures.
_MEANINGS = {
    "base": "first delay, seconds",
    "factor": "growth per attempt, a number of at least 1",
    "step": "linear's growth per attempt, seconds; the base if not given",
    "cap": "largest delay, seconds",
    "rng": "an integer seeding the jittered strategies' draws; unseeded if not given",
}


@cache
def _signature_defaults() -> dict[str, dict[str, Any]]:
    """Each parameter of show, and its default in each strategy taking it."""
    defaults: dict[str, dict[str, Any]] = {}
    for name, function in strategies.STRATEGIES.items():
        signature = inspect.signature(function).parameters.values()
        for parameter, spelled in zip(signature, strategies.parameters(name)):
            defaults.setdefault(spelled, {})[name] = parameter.default
    return defaults


def _default_text(defaults: dict[str, Any]) -> str:
    """'default 2; 3 for decorrelated': the most common default, then the others by strategy."""
    values = Counter(value for value in defaults.values() if value is not None)
    if not values:
        return ""
    common = values.most_common(1)[0][0]
    others = [
        f"{value:g} for {', '.join(name for name, v in defaults.items() if v == value)}"
        for value in values
        if value != common
    ]
    return " (" + "; ".join([f"default {common:g}", *others]) + ")"


def add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "strategy",
        choices=list(strategies.STRATEGIES),
        metavar="STRATEGY",
        help="one of: " + ", ".join(strategies.STRATEGIES),
    )
    for parameter, defaults in _signature_defaults().items():
        parser.add_argument(
            option(parameter),
            type=integer if parameter == "rng" else number,
            dest=parameter,
            metavar="N" if parameter == "rng" else parameter.upper(),
            help=_MEANINGS.get(parameter, "seconds") + _default_text(defaults),
        )
    parser.add_argument(
        "-n",
        type=whole(1),
        metavar="N",
        help=f"delays to show ({ROWS} unless --until-elapsed is given)",
    )
    parser.add_argument(
        "--until-elapsed",
        type=number,
        metavar="T",
        help="stop once the time slept reaches T seconds, or after"
        f" {UNTIL_AT_MOST:,} delays if it does not (a note on stderr says so; -n sets that bound)",
    )
    parser.add_argument("--json", action="store_true", help="print the rows as a JSON array")
    parser.add_argument(
        "--plot",
        type=plot_path,
        metavar="FILE.png",
        help="draw the attempts the table shows (at most"
        f" {DRAWN_AT_MOST:,}): sleep and time slept, sampled many times if jittered",
    )
    parser.add_argument(
        "--samples",
        type=whole(2),
        metavar="K",
        help=f"schedules sampled for --plot of a jittered strategy ({SAMPLES};"
        f" at most {SAMPLED_AT_MOST:,} sleeps in all)",
    )


def prints(args: argparse.Namespace) -> bool:
    """Whether the command writes to stdout (a picture goes to its file)."""
    return not args.plot


def run(args: argparse.Namespace) -> None:
    name: str = args.strategy
    options = _options(args)
    seed = options.pop("rng", None)
    strategies.make(name, **options)  # checks them: bad usage if wrong
    if args.plot and args.json:
        raise UsageError("--json", "show --plot draws the table instead of printing it: choose one")
    if args.samples is not None and not args.plot:
        raise UsageError("--samples", "sets how many schedules --plot samples: give --plot too")
    until = args.until_elapsed
    if until is not None and until < 0:
        raise UsageError("--until-elapsed", f"must be at least 0, got {until:g}")
    # -n, else as many as --until-elapsed takes (within a bound), else ROWS
    limit = args.n if args.n is not None else UNTIL_AT_MOST if until is not None else ROWS
    if args.plot:
        _picture(args, options, seed, limit, until)
        return
    rng = None if seed is None else _seeded(seed)
    rows = _rows(strategies.make(name, rng=rng, **options), limit, until)
    last = (-1, 0.0, 0.0)
    if args.json:  # streamed: one row per line, constant memory
        write("[")
        for last in rows:
            attempt, sleep, slept = last
            row = to_json({"attempt": attempt, "sleep": sleep, "elapsed": slept})
            write(row if attempt == 0 else ",\n" + row)
        write("]\n")
    else:
        write(f"{'attempt':>7}  {'sleep':>12}  {'elapsed':>14}\n")
        for last in rows:
            attempt, sleep, slept = last
            write(f"{attempt:>7}  {decimal(sleep):>12}  {decimal(slept):>14}\n")
    _note_bound(args, last[0] + 1, last[2])


def _options(args: argparse.Namespace) -> dict[str, Any]:
    """The strategy options the user gave, checked against what the strategy takes."""
    taken = strategies.parameters(args.strategy)
    given = {}
    for parameter in _signature_defaults():
        value = getattr(args, parameter)
        if value is None:
            continue
        if parameter not in taken:
            raise UsageError(option(parameter), f"{args.strategy} takes no {option(parameter)}")
        given[parameter] = value
    return given


def _rows(
    delays: Iterator[float], limit: int, until: float | None
) -> Iterator[tuple[int, float, float]]:
    """(attempt, sleep, time slept) for *limit* delays, or until the time slept reaches *until*."""
    slept = 0.0
    for attempt, sleep in zip(range(limit), delays):
        slept += sleep
        yield attempt, sleep, slept
        if until is not None and slept >= until:
            return


def _note_bound(args: argparse.Namespace, shown: int, slept: float) -> None:
    """Say so when --until-elapsed was not reached within the rows shown: the default
    bound's, or those -n asked for."""
    until = args.until_elapsed
    if until is None or slept >= until:
        return
    if args.n is None:
        say(
            f"{args.parser.prog}: stopped after {plural(shown, 'delay')}, {slept:g} s slept:"
            f" --until-elapsed {until:g} is not reached (-n N shows more)"
        )
    else:
        say(
            f"{args.parser.prog}: stopped at -n {args.n:,}, {slept:g} s slept:"
            f" --until-elapsed {until:g} is not reached"
        )


def _picture(
    args: argparse.Namespace,
    options: dict[str, Any],
    seed: int | None,
    limit: int,
    until: float | None,
) -> None:
    """The attempts the table would show, drawn: *samples* schedules if jittered."""
    name: str = args.strategy
    samples: int = SAMPLES if args.samples is None else args.samples
    draws = Random() if seed is None else _seeded(seed)  # (the table's first, with --seed)
    rows = list(
        _rows(strategies.make(name, rng=draws, **options), min(limit, DRAWN_AT_MOST + 1), until)
    )
    first = [sleep for _, sleep, _ in rows]
    if len(first) > DRAWN_AT_MOST:
        if args.n is not None:
            raise UsageError(
                "-n", f"--plot draws at most {DRAWN_AT_MOST:,} attempts, got {args.n:,}"
            )
        raise UsageError(
            "--until-elapsed",
            f"{until:g} is not reached within the {DRAWN_AT_MOST:,} attempts --plot draws at most",
        )
    jittered = "rng" in strategies.parameters(name)
    if not jittered and args.samples is not None:
        raise UsageError(
            "--samples",
            f"{name} has no jitter: --plot draws its one schedule; --samples is for a jittered"
            " strategy's",
        )
    if jittered and samples * len(first) > SAMPLED_AT_MOST:
        raise UsageError(
            "--samples",
            f"--plot samples at most {SAMPLED_AT_MOST:,} sleeps in all;"
            f" {plural(samples, 'schedule')} of {plural(len(first), 'attempt')}"
            f" are {samples * len(first):,}",
        )
    schedules = [first]
    if jittered:
        schedules += [
            list(islice(strategies.make(name, rng=draws, **options), len(first)))
            for _ in range(samples - 1)
        ]
    given = ", ".join(f"{key}={value:g}" for key, value in options.items())
    title = f"{name}({given})"
    reference = None
    if jittered:
        title += f": {plural(samples, 'schedule')}, " + (
            "unseeded" if seed is None else f"seed {seed}"
        )
        reference = _reference(name, options, len(first))

    def draw(path: str) -> None:
        from ._pictures import show  # matplotlib: only for --plot

        show(path, title, schedules, reference)

    picture("show", args.plot, draw)
    _note_bound(args, len(first), rows[-1][2])


def _reference(name: str, options: dict[str, Any], n: int) -> tuple[str, list[float]]:
    """The plain exponential a jittered strategy is compared with: the strategy's own
    base, factor and cap (given or its defaults) where it has them, exponential's otherwise."""
    values = {}
    for parameter in strategies.parameters("exponential"):
        defaults = _signature_defaults()[parameter]
        values[parameter] = options.get(parameter, defaults.get(name, defaults["exponential"]))
    label = "exponential(" + ", ".join(f"{key}={value:g}" for key, value in values.items()) + ")"
    return label, list(islice(strategies.make("exponential", **values), n))


def _seeded(seed: int) -> Random:
    """The draws of ``--seed`` *seed*: a negative seed its own (``Random(-5)``
    draws what ``Random(5)`` does: Python seeds by the absolute value)."""
    return Random(seed if seed >= 0 else str(seed))
