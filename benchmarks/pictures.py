"""Make the docs' pictures, from seeded runs of the command line itself.

    python benchmarks/pictures.py            # into benchmarks/pictures/
    python benchmarks/pictures.py --quick --out DIR   # small runs (the test suite's check)

Needs the plot extra (matplotlib).  Every picture is what a user gets from
the same ``python -m backoff_iter ... --plot`` command, printed as it runs;
``hedging.png`` is drawn by ``benchmarks/hedging.py``, ``overload-fleet.png``
by ``benchmarks/overload_fleet.py``.  The docs' pages show them where they
lie (``.. image:: ../benchmarks/pictures/NAME.png``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = "2026"


def commands(quick: bool) -> dict[str, list[str]]:
    """The file name of each picture, and the command that draws it."""
    samples = "200" if quick else "2000"
    # --jobs 1: a quick study is a few tasks, not worth starting processes for.
    study = ["--runs", "2", "--clients", "10,40", "--jobs", "1"] if quick else []
    storm = ["--seconds", "40", "--rate", "80", "--capacity", "100"] if quick else []
    return {
        "show-decorrelated.png": [
            "show",
            "decorrelated",
            "--base",
            "1",
            "--cap",
            "30",
            "-n",
            "15",
            "--samples",
            samples,
        ],
        "show-full_jitter.png": [
            "show",
            "full_jitter",
            "--base",
            "0.1",
            "--cap",
            "30",
            "-n",
            "15",
            "--samples",
            samples,
        ],
        "show-smooth_jitter.png": [
            "show",
            "smooth_jitter",
            "--base",
            "0.1",
            "--cap",
            "30",
            "-n",
            "15",
            "--samples",
            samples,
        ],
        "simulate.png": ["simulate", *study],
        "overload.png": ["overload", *storm],
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small runs, for the tests")
    parser.add_argument("--out", default=os.path.join(HERE, "pictures"), help="directory")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    # Each command runs in this process, its output dropped: the command line's
    # own main() is what `python -m backoff_iter` runs, and the two benchmarks'
    # main() what their scripts run - without starting Python and importing
    # matplotlib again for each picture.
    from backoff_iter.cli import PROG
    from backoff_iter.cli import main as command_line

    for name, command in commands(args.quick).items():
        argv = [*command, "--seed", SEED, "--plot", os.path.join(args.out, name)]
        status = _quietly(command_line, argv, PROG)
        if status:
            raise SystemExit(f"{PROG} {' '.join(argv)}: exit status {status}")
    import hedging  # hedging.png: its benchmark, which also prints the docs' table
    import overload_fleet  # overload-fleet.png: the fleet table's benchmark

    quick = ["--quick"] if args.quick else []
    _quietly(
        hedging.main, ["--seed", SEED, "--out", args.out, *quick], "python benchmarks/hedging.py"
    )
    _quietly(
        overload_fleet.main, ["--out", args.out, *quick], "python benchmarks/overload_fleet.py"
    )
    return 0


def _quietly(main: Callable[[list[str]], Any], argv: list[str], shown: str) -> Any:
    """*main*(*argv*), printed first as the command *shown* with *argv*, its output dropped."""
    print("$", shown, " ".join(argv), flush=True)
    with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
        return main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
