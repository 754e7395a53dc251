"""``python -m backoff_iter``: show a schedule, plan its parameters, simulate contention."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from itertools import islice
from random import Random
from typing import Any, Dict, List, NoReturn, Optional, Sequence, cast

from . import planning, simulation, strategies
from .adaptors import elapsed

# The options `show` passes on, per strategy, as (option, parameter) pairs.
_SHOW_OPTIONS: Dict[str, Dict[str, str]] = {
    "constant": {"base": "delay"},
    "linear": {"base": "base", "step": "step", "cap": "cap"},
    "exponential": {"base": "base", "factor": "factor", "cap": "cap"},
    "fibonacci": {"base": "base", "cap": "cap"},
    "full_jitter": {"base": "base", "factor": "factor", "cap": "cap", "seed": "rng"},
    "equal_jitter": {"base": "base", "factor": "factor", "cap": "cap", "seed": "rng"},
    "decorrelated": {"base": "base", "factor": "factor", "cap": "cap", "seed": "rng"},
    "smooth_jitter": {"base": "base", "cap": "cap", "seed": "rng"},
}


class _Parser(argparse.ArgumentParser):
    """argparse, but an error is one line (no usage block) and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def _number(text: str) -> float:
    value = float(text)
    if math.isnan(value):
        raise argparse.ArgumentTypeError(f"must be a number, got {text}")
    return value


def _names(text: str) -> List[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in simulation.STRATEGIES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown strategy {', '.join(unknown) or text!r}"
            f" (choose from {', '.join(simulation.STRATEGIES)})"
        )
    return names


def _counts(text: str) -> List[int]:
    return [_positive_int(part) for part in text.split(",") if part.strip()]


def _parser() -> _Parser:
    parser = _Parser(prog="python -m backoff_iter", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    show = commands.add_parser("show", help="print a strategy's schedule as a table")
    show.add_argument("strategy", choices=list(_SHOW_OPTIONS), metavar="STRATEGY",
                      help=", ".join(_SHOW_OPTIONS))
    show.add_argument("--base", type=_number, help="first delay (seconds)")
    show.add_argument("--factor", type=_number, help="growth factor")
    show.add_argument("--step", type=_number, help="linear's step")
    show.add_argument("--cap", type=_number, help="largest delay")
    show.add_argument("--seed", type=int, help="seed for the jittered strategies")
    show.add_argument("-n", type=_positive_int, default=10, help="sleeps to show (10)")
    show.add_argument("--json", action="store_true", help="print the rows as JSON")
    show.set_defaults(run=_show, parser=show)

    plan = commands.add_parser("plan", help="derive a geometric schedule from what you want")
    plan.add_argument("--base", type=_number, required=True, help="first sleep a")
    how = plan.add_mutually_exclusive_group(required=True)
    how.add_argument("--factor", type=_number, help="the factor r")
    how.add_argument("--ratio", type=_number, help="sleep / time waited so far: r = 1 + ratio")
    plan.add_argument("--elapsed", type=_number, required=True, help="elapsed time T")
    plan.add_argument("--compare", type=_number, metavar="FACTOR",
                      help="another factor: its retry count over the same time")
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")
    plan.set_defaults(run=_plan, parser=plan)

    simulate = commands.add_parser("simulate", help="the AWS contention study")
    simulate.add_argument("--strategies", type=_names,
                          default=list(simulation.DEFAULT_STRATEGIES),
                          help="comma-separated: " + ", ".join(simulation.STRATEGIES))
    simulate.add_argument("--clients", type=_counts, default=list(simulation.DEFAULT_CLIENTS),
                          help="comma-separated client counts (10,20,...,190)")
    simulate.add_argument("--runs", type=_positive_int, default=100,
                          help="runs to average (100)")
    simulate.add_argument("--seed", type=int, help="make the study repeatable")
    simulate.add_argument("--base", type=_number, default=5.0, help="base, ms (5)")
    simulate.add_argument("--cap", type=_number, default=2000.0, help="cap, ms (2000)")
    simulate.add_argument("--json", action="store_true", help="print the results as JSON")
    simulate.add_argument("--plot", metavar="FILE.png",
                          help="draw work and time charts (needs the plot extra)")
    simulate.set_defaults(run=_simulate, parser=simulate)
    return parser


def _show(args: argparse.Namespace) -> None:
    options = _SHOW_OPTIONS[args.strategy]
    kwargs: Dict[str, Any] = {}
    for option in ("base", "factor", "step", "cap", "seed"):
        value = getattr(args, option)
        if value is None:
            continue
        if option not in options:
            raise ValueError(f"{args.strategy} takes no --{option}")
        kwargs[options[option]] = Random(value) if option == "seed" else value
    delays = getattr(strategies, args.strategy)(**kwargs)
    sleeps = list(islice(delays, args.n))
    rows = [
        {"attempt": attempt, "sleep": sleep, "elapsed": total}
        for attempt, (sleep, total) in enumerate(zip(sleeps, elapsed(sleeps)))
    ]
    if args.json:
        print(json.dumps(rows))
        return
    print(f"{'attempt':>7}  {'sleep':>12}  {'elapsed':>14}")
    for row in rows:
        print(f"{row['attempt']:>7}  {row['sleep']:>12.3f}  {row['elapsed']:>14.3f}")


def _plan(args: argparse.Namespace) -> None:
    factor = args.factor if args.ratio is None else planning.factor_for_ratio(args.ratio)
    result = planning.plan(args.base, factor, args.elapsed)
    report: Dict[str, Any] = {"base": args.base, "factor": factor, "elapsed": args.elapsed,
                              **result._asdict()}
    if args.compare is not None:
        other = planning.plan(args.base, args.compare, args.elapsed)
        report["compare"] = {"factor": args.compare, "retries": other.retries,
                             "exact": other.exact,
                             "ratio": planning.retry_count_ratio(factor, args.compare)}
    if args.json:
        print(json.dumps(report))
        return
    before = "none" if result.sleep_before is None else f"{result.sleep_before:.3f}"
    print(f"base {args.base:g}, factor {factor:g}: by elapsed {args.elapsed:g}")
    print(f"  retries:      {result.retries} (exactly {result.exact:.3f})")
    print(f"  slept:        {result.elapsed:.3f}")
    print(f"  sleep before: {before}")
    print(f"  sleep after:  {result.sleep_after:.3f}")
    if args.compare is not None:
        compare = report["compare"]
        print(f"factor {args.compare:g} over the same time: {compare['retries']} retries"
              f" (exactly {compare['exact']:.3f}); in the long run"
              f" log {factor:g} / log {args.compare:g} = {compare['ratio']:.3f} times as many")


def _simulate(args: argparse.Namespace) -> None:
    if args.plot:  # fail before minutes of work, not after
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise ValueError(
                "--plot needs matplotlib: pip install 'backoff_iter[plot]'"
            ) from None
    started = time.perf_counter()

    def progress(done: int, total: int, strategy: str, clients: int) -> None:
        print(f"\rsimulate: {done}/{total} {strategy} {clients} clients"
              f" ({time.perf_counter() - started:.1f} s)",
              end="", file=sys.stderr, flush=True)

    results = simulation.simulate(
        args.strategies, args.clients, args.runs, seed=args.seed, base=args.base,
        cap=args.cap, progress=progress,
    )
    print(f"\rsimulate: done in {time.perf_counter() - started:.1f} s" + " " * 30,
          file=sys.stderr)
    if args.json:
        print(json.dumps([r._asdict() for r in results]))
    else:
        print(simulation.table(results), end="")
    if args.plot:
        _plot(results, args.plot)


def _plot(results: Sequence[simulation.Result], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, (work, duration) = pyplot.subplots(1, 2, figsize=(12, 4.5))
    for name in dict.fromkeys(r.strategy for r in results):
        rows = [r for r in results if r.strategy == name]
        work.plot([r.clients for r in rows], [r.work for r in rows], label=name)
        duration.plot([r.clients for r in rows], [r.time for r in rows], label=name)
    work.set(title="Work (writes to the server)", xlabel="clients", ylabel="calls")
    duration.set(title="Time to last success", xlabel="clients", ylabel="ms")
    for axes in (work, duration):
        axes.legend()
        axes.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path)
    pyplot.close(figure)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        args.run(args)
    except (ValueError, TypeError) as error:  # the library's argument checks
        cast(_Parser, args.parser).error(str(error))
    return 0
