"""``overload``: a retry storm second by second, with and without budgets, limiters,
throttles and breakers, for one client or a fleet."""

from __future__ import annotations

import argparse
import math

from backoff_iter import overload, strategies

from ._common import (
    Progress,
    UsageError,
    default,
    integer,
    names_among,
    number,
    picture,
    plot_path,
    table,
    to_json,
    whole,
    write,
    writing,
)

NAME = "overload"
SUMMARY = "Simulate a retry storm second by second, with and without budgets."
# The bounds that keep a run within minutes, said where the option is.
_LIMITS = {
    "rate": f"; a run may expect at most {overload.MAX_ATTEMPTS:,} attempts:"
    " rate x seconds (the spike included) x (1 + retries)",
    "seconds": f"; at most {overload.MAX_SECONDS:,.0f}",
}

_MEANINGS = {
    "rate": "requests arriving per second",
    "capacity": "attempts the server serves per second",
    "spike": "the rate's multiplier during the spike",
    "spike_at": "when the spike starts, seconds",
    "spike_for": "how long the spike lasts, seconds",
    "timeout": "how long a client waits for an answer, seconds",
    "error_rate": "chance of a transient error per attempt, 1 a total outage",
    "base": "the strategy's base, seconds",
    "cap": "the strategy's cap, seconds",
    "seconds": "how long the run lasts, seconds: requests arrive until then, and what is"
    " under way then is unfinished",
}


def add(parser: argparse.ArgumentParser) -> None:
    storm = overload.simulate_overload
    parser.add_argument(
        "--strategies",
        type=names_among(["none", *strategies.STRATEGIES], once=True),
        default=list(default(storm, "strategies")),
        metavar="NAMES",
        help="comma-separated: none (no retries), "
        + ", ".join(strategies.STRATEGIES)
        + f" ({', '.join(default(storm, 'strategies'))})",
    )
    parser.add_argument(
        "--budgets",
        type=names_among(["none", *overload.BUDGETS, *overload.PARTS], joined="+", once=True),
        default=list(default(storm, "budgets")),
        metavar="NAMES",
        help="comma-separated runs: none, or one budget ("
        + ", ".join(overload.BUDGETS)
        + ") and other parts ("
        + ", ".join(overload.PARTS)
        + "), each at the library's defaults (retry_quota: botocore 1.44's standard mode,"
        + " 14 units of 500 a retry), joined by + (breaker+token_bucket)"
        + f" ({', '.join(default(storm, 'budgets'))})",
    )
    for parameter, meaning in _MEANINGS.items():
        value = default(storm, parameter)
        parser.add_argument(
            f"--{parameter.replace('_', '-')}",
            type=number,
            default=value,
            metavar="X",
            help=f"{meaning} ({value:g}{_LIMITS.get(parameter, '')})",
        )
    parser.add_argument(
        "--clients",
        type=whole(1),
        default=default(storm, "clients"),
        metavar="N",
        help="clients (processes) the arrivals are split among, at random;"
        " each has its own rate limiter"
        f" (%(default)s; at most {overload.MAX_CLIENTS:,})",
    )
    parser.add_argument(
        "--budget-scope",
        choices=overload.SCOPES,
        default=default(storm, "budget_scope"),
        help="process: a budget, throttle and breaker per client; fleet: one of each"
        " the clients share, as through a RedisStore (%(default)s)",
    )
    parser.add_argument(
        "--sync-interval",
        type=number,
        default=default(storm, "sync_interval"),
        metavar="X",
        help="a fleet budget's lag: seconds between a client's exchanges (%(default)g)",
    )
    parser.add_argument(
        "--server",
        choices=overload.SERVERS,
        default=default(storm, "server"),
        help="serve-all serves even attempts whose client has gone; drop-expired"
        " drops them when it comes to them (%(default)s)",
    )
    parser.add_argument(
        "--retries",
        type=whole(0),
        default=default(storm, "retries"),
        metavar="N",
        help="retries per request at most (%(default)s; at most"
        f" {overload.MAX_ATTEMPTS - 1:,}: 1 + retries attempts within a run's bound)",
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


def _figure(value: float | None, spec: str) -> str:
    """A figure of the table; "-" for one with nothing to count (no requests)."""
    return "-" if value is None else format(value, spec)


def prints(args: argparse.Namespace) -> bool:
    return True


def _check_spike(args: argparse.Namespace) -> None:
    """Refuse a run that ends before its spike's aftermath can be seen.  Bad usage, not
    a warning: the table's figures are the spike's aftermath (recovery after it, goodput
    over the last 20 s), so a run cut before the spike, within it, or less than the
    5 s recovery is measured over after it answers none of its questions - it printed
    "never" for a server that never failed - and is a slip (--seconds 15 forgetting the
    spike's defaults, 10 s from 10 s).  A run with no spike (--spike 1 or --spike-for 0)
    is measured from its start: it needs those 5 s too.  Values the library refuses
    anyway (negative, infinite) are left to its own message."""
    seconds, start, length, spike = args.seconds, args.spike_at, args.spike_for, args.spike
    valid = 0 <= start < math.inf and 0 <= length < math.inf and 1 <= spike < math.inf
    if not (valid and 0 < seconds <= overload.MAX_SECONDS):
        return
    room = overload.RECOVERED_FOR
    end = overload.spike_end(spike, start, length)
    if end is None:  # no spike: recovery is measured from the start
        if seconds < room:
            raise UsageError(
                "--seconds",
                f"a run of {seconds:g} s is shorter than the {room:g} s its recovery is"
                f" measured over: give --seconds {room:g} or more",
            )
        return
    if not math.isfinite(end):  # two finite values whose sum is beyond floats
        raise UsageError(
            "--seconds",
            f"the spike ends past any run (--spike-at {start:g} + --spike-for {length:g}"
            " is beyond the largest float): move the spike",
        )
    # (as typed: --spike-at 0.1 --spike-for 2.2 --seconds 7.3 leaves its 5 s, though the
    # floats 0.1 + 2.2 + 5 come to a hair past 7.3)
    if seconds < end + room and not math.isclose(seconds, end + room):
        if seconds <= start:
            where = "before the spike starts"
        elif seconds < end:
            where = "before the spike ends"
        else:
            where = f"{seconds - end:g} s after the spike ends"
        most = overload.MAX_SECONDS
        remedy = (
            f"give --seconds {end + room:g} or more, or move the spike"
            if end + room <= most
            else f"move the spike to end by {most - room:g} s (a run lasts at most {most:g} s)"
        )
        raise UsageError(
            "--seconds",
            f"the run ends at {seconds:g} s, {where} (--spike-at {start:g}"
            f" + --spike-for {length:g} = {end:g} s), leaving less than the {room:g} s its"
            f" recovery is measured over: {remedy}",
        )


def run(args: argparse.Namespace) -> None:
    _check_spike(args)
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
        clients=args.clients,
        budget_scope=args.budget_scope,
        sync_interval=args.sync_interval,
        server=args.server,
        seed=args.seed,
        progress=lambda strategy, budget, share: progress(f"{strategy} / {budget}: {share:.0%}"),
    )
    progress.done()
    with writing(args.plot):  # (a reader gone keeps no picture from being drawn)
        if args.json:
            write(to_json([run._asdict() for run in runs]) + "\n")
        else:
            # The seconds the goodput column is of: the header says them.
            last = args.seconds - overload.first_of_last(args.seconds)
            header = [
                "strategy",
                "budget",
                "requests",
                "attempts",
                "amplification",
                "succeeded",
                f"goodput last {last:g} s",
                "recovery",
            ]
            rows = [
                [
                    run.strategy,
                    run.budget,
                    f"{run.requests:,}",
                    f"{run.attempts:,}",
                    _figure(run.amplification, ".2f"),
                    _figure(run.succeeded, ".1%"),
                    _figure(run.goodput_last_20s, ".1%"),
                    "never" if run.recovery_seconds is None else f"{run.recovery_seconds:g} s",
                ]
                for run in runs
            ]
            write(table(header, rows) + "\n")
    if args.plot:

        def draw(path: str) -> None:
            from ._pictures import overload  # matplotlib: only for --plot

            overload(path, runs, args)

        picture(NAME, args.plot, draw)
