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
import os
import subprocess
import sys

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
    for name, command in commands(args.quick).items():
        full = [
            sys.executable,
            "-m",
            "backoff_iter",
            *command,
            "--seed",
            SEED,
            "--plot",
            os.path.join(args.out, name),
        ]
        print("$", " ".join(["python", *full[1:]]), flush=True)
        subprocess.run(full, check=True, stdout=subprocess.DEVNULL)
    # hedging.png comes from its benchmark, which also prints the docs' table.
    hedging = [sys.executable, os.path.join(HERE, "hedging.py"), "--seed", SEED, "--out", args.out]
    hedging += ["--quick"] if args.quick else []
    print("$", " ".join(["python", *hedging[1:]]), flush=True)
    subprocess.run(hedging, check=True, stdout=subprocess.DEVNULL)
    # overload-fleet.png comes from the fleet table's benchmark, which prints the table.
    fleet = [sys.executable, os.path.join(HERE, "overload_fleet.py"), "--out", args.out]
    fleet += ["--quick"] if args.quick else []
    print("$", " ".join(["python", *fleet[1:]]), flush=True)
    subprocess.run(fleet, check=True, stdout=subprocess.DEVNULL)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
