"""``simulate``: the AWS contention study, N clients backing off on one row."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from backoff_iter import simulation

from ._common import (
    Progress,
    counts,
    decimal,
    default,
    integer,
    names_among,
    number,
    picture,
    plot_path,
    plural,
    table,
    to_json,
    whole,
    write,
    writing,
)

# The study's strategies by name (simulation.py is renaming this registry: change this line).
STUDY_STRATEGIES = simulation.STUDY_STRATEGIES

NAME = "simulate"
SUMMARY = "Rerun the AWS contention study: N clients, one row, backing off."

# The most processes --jobs may ask for.  The study gains nothing beyond one per core,
# so the bound is only there to make a slip (--jobs 1000000) bad usage instead of a
# storm of processes (each some 20 MB): the same number on every machine, so that a
# command line good on one is good on all, and as many as a large server has cores.
# Windows waits on at most 63 handles at once, and its process pools stop at 61.
MAX_JOBS = 61 if sys.platform == "win32" else 256


def _listed(values: Sequence[int]) -> str:
    """10,20,...,190 for an arithmetic run, else every value."""
    steps = {b - a for a, b in zip(values, values[1:])}
    if len(values) > 4 and len(steps) == 1:
        return f"{values[0]},{values[1]},...,{values[-1]}"
    return ",".join(map(str, values))


def add(parser: argparse.ArgumentParser) -> None:
    study = simulation.simulate
    parser.add_argument(
        "--strategies",
        type=names_among(list(STUDY_STRATEGIES)),
        default=list(simulation.DEFAULT_STRATEGIES),
        metavar="NAMES",
        help="comma-separated, from: "
        + ", ".join(STUDY_STRATEGIES)
        + f" ({', '.join(simulation.DEFAULT_STRATEGIES)})",
    )
    clients = default(study, "clients")
    parser.add_argument(
        "--clients",
        type=counts,
        default=list(clients),
        metavar="COUNTS",
        help=f"comma-separated client counts ({_listed(clients)})",
    )
    parser.add_argument(
        "--runs",
        type=whole(1),
        default=default(study, "runs"),
        metavar="N",
        help="runs to average per cell (%(default)s; a study may cost at most"
        f" {simulation.MAX_WORK:,} steps: clients² x runs, summed over its cells)",
    )
    parser.add_argument(
        "--seed", type=integer, metavar="N", help="make the study repeatable (an integer)"
    )
    for unit in ("base", "cap"):
        parser.add_argument(
            f"--{unit}",
            type=number,
            default=default(study, unit),
            metavar="MS",
            help=f"the strategies' {unit}, milliseconds ({default(study, unit):g})",
        )
    parser.add_argument(
        "--jobs",
        type=whole(1, MAX_JOBS),
        metavar="N",
        help="processes to run the study on; never more than it has tasks of"
        f" {simulation.RUNS_PER_TASK} runs (default: one per core, {os.cpu_count() or 1} here;"
        f" at most {MAX_JOBS})",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument(
        "--plot", type=plot_path, metavar="FILE.png", help="draw work and time against clients"
    )


def prints(args: argparse.Namespace) -> bool:
    return True


def jobs(args: argparse.Namespace) -> int:
    """--jobs, one per core by default, and never more than the study's tasks."""
    runs: int = args.runs
    tasks = len(args.strategies) * len(args.clients) * -(-runs // simulation.RUNS_PER_TASK)
    wanted: int = args.jobs or os.cpu_count() or 1
    return max(1, min(wanted, tasks))


def run(args: argparse.Namespace) -> None:
    progress = Progress(NAME)
    results = simulation.simulate(
        args.strategies,
        args.clients,
        args.runs,
        seed=args.seed,
        base=args.base,
        cap=args.cap,
        jobs=jobs(args),
        progress=lambda done, total: progress(f"{done:,}/{plural(total, 'run')}"),
    )
    progress.done()
    with writing(args.plot):  # (a reader gone keeps no picture from being drawn)
        if args.json:
            write(to_json([r._asdict() for r in results]) + "\n")
        else:
            for name in dict.fromkeys(r.strategy for r in results):
                rows = [
                    [str(r.clients), decimal(r.work, places=1), decimal(r.time, places=1)]
                    for r in results
                    if r.strategy == name
                ]
                write(f"{name}\n{table(['clients', 'work', 'time (ms)'], rows)}\n\n")
    if args.plot:

        def draw(path: str) -> None:
            from ._pictures import simulation  # matplotlib: only for --plot

            simulation(path, results, args)

        picture(NAME, args.plot, draw)
