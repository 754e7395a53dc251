"""``overload``: a retry storm second by second, with and without retry budgets."""

from __future__ import annotations

import argparse

from backoff_iter import overload, strategies

from ._common import (
    Progress,
    default,
    integer,
    names,
    number,
    picture,
    pictures,
    plot_path,
    table,
    to_json,
    whole,
    write,
)

NAME = "overload"
SUMMARY = "Simulate a retry storm second by second, with and without budgets."

_MEANINGS = {
    "rate": "requests arriving per second",
    "capacity": "attempts the server serves per second",
    "spike": "the rate's multiplier during the spike",
    "spike_at": "when the spike starts, seconds",
    "spike_for": "how long the spike lasts, seconds",
    "timeout": "how long a client waits for an answer, seconds",
    "error_rate": "chance of a transient error per attempt",
    "base": "the strategy's base, seconds",
    "cap": "the strategy's cap, seconds",
    "seconds": "how long requests arrive, seconds",
}


def add(parser: argparse.ArgumentParser) -> None:
    storm = overload.simulate_overload
    parser.add_argument(
        "--strategies",
        type=names,
        default=list(default(storm, "strategies")),
        metavar="NAMES",
        help="comma-separated: none (no retries), "
        + ", ".join(strategies.STRATEGIES)
        + f" ({','.join(default(storm, 'strategies'))})",
    )
    parser.add_argument(
        "--budgets",
        type=names,
        default=list(default(storm, "budgets")),
        metavar="NAMES",
        help="comma-separated, each run with its own shared one: "
        + ", ".join(overload.BUDGETS)
        + f" ({','.join(default(storm, 'budgets'))})",
    )
    for parameter, meaning in _MEANINGS.items():
        value = default(storm, parameter)
        parser.add_argument(
            f"--{parameter.replace('_', '-')}",
            type=number,
            default=value,
            metavar="X",
            help=f"{meaning} ({value:g})",
        )
    parser.add_argument(
        "--retries",
        type=whole(0),
        default=default(storm, "retries"),
        metavar="N",
        help="retries per request at most (%(default)s)",
    )
    parser.add_argument(
        "--seed", type=integer, metavar="N", help="make the runs repeatable (an integer)"
    )
    parser.add_argument("--json", action="store_true", help="print the runs as JSON")
    parser.add_argument(
        "--plot",
        type=plot_path,
        metavar="FILE.png",
        help="draw goodput and attempts per second, the spike shaded",
    )


def prints(args: argparse.Namespace) -> bool:
    return True


def run(args: argparse.Namespace) -> None:
    progress = Progress(NAME)
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
        write(to_json([run._asdict() for run in runs]) + "\n")
    else:
        header = [
            "strategy",
            "budget",
            "requests",
            "attempts",
            "amplification",
            "succeeded",
            "goodput last 20 s",
            "recovery",
        ]
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
        write(table(header, rows) + "\n")
    if args.plot:
        picture(NAME, args.plot, lambda path: pictures().overload(path, runs, args))
