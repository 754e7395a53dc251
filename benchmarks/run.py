"""Run every benchmark in one process and print the tables.

    python benchmarks/run.py            # the full run (a few minutes)
    python benchmarks/run.py --quick    # a smoke run, under 30 s
    python benchmarks/run.py --rst README.rst

Peers come from the ``bench`` extra (``pip install '.[bench]'``); a peer that
is not installed is left out of the tables.  ``--rst FILE`` writes the tables
as reStructuredText: between the ``.. benchmark-start`` and
``.. benchmark-end`` lines if FILE has them, else as the whole file.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
from importlib import metadata
from typing import List, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]  # these modules, then this checkout

import delays  # noqa: E402
import drivers  # noqa: E402

GOAL_TO_REFERENCE = 1.3  # each strategy within 1.3x of its hand-written generator
GOAL_SUCCESS_NS = 500.0  # retry driver overhead per successful call
GOAL_RETRY_NS = 1000.0  # retry driver overhead per retry
PEERS = ("backoff", "tenacity", "stamina", "google-api-core")


def table(header: Sequence[str], rows: List[Sequence[str]]) -> List[str]:
    """A reST simple table (also readable as plain text)."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    rule = "  ".join("=" * w for w in widths)
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    return [rule, line(header), rule, *(line(r) for r in rows), rule]


def ns(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def environment() -> List[str]:
    import backoff_iter

    versions = [f"backoff_iter {backoff_iter.__version__}"]
    for name in PEERS:
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{name} (not installed)")
    return [
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}; "
        f"{platform.python_implementation()} {platform.python_version()}.",
        "Versions: " + ", ".join(versions) + ".",
    ]


def report(quick: bool) -> List[str]:
    values = 20_000 if quick else 200_000
    repeats = 3 if quick else 7
    far_index = 100_000 if quick else 10_000_000
    budget = 1.0 if quick else 10.0
    memory_values = 20_000 if quick else 1_000_000
    calls = 2_000 if quick else 50_000

    started = time.perf_counter()
    out = environment()
    out += ["", f"Mode: {'quick' if quick else 'full'}; best of {repeats} repeats.", ""]

    out += [
        f"**ns per delay** (base {delays.BASE}, cap {delays.CAP:g}, {values:,} values"
        " through ``islice``). *reference*: a hand-written inline generator of the"
        f" same formula. Goal: within {GOAL_TO_REFERENCE}x of it.",
        "",
    ]
    rows = []
    for row in delays.per_value(values, repeats):
        best = row.best_peer
        rows.append([
            row.strategy,
            ns(row.ours),
            ns(row.reference),
            f"{row.to_reference:.2f}x",
            "ok" if row.to_reference <= GOAL_TO_REFERENCE else "MISSED",
            ", ".join(f"{p} {ns(v)}" for p, v in row.peers.items()) or "no peer has it",
            f"{row.ours / row.peers[best]:.2f}x" if best else "—",
            f"{ns(row.first_ten)} (ref {ns(row.reference_first_ten)})",
        ])
    out += table(
        ["strategy", "ours", "reference", "ours/ref", "goal", "peers (ns)",
         "ours/best peer", "make + 10 values"],
        rows,
    )

    out += [
        "",
        f"**Flat cost**: ns per value near value 10 and near value {far_index:,},"
        " without a cap (best of the repeats).",
        "",
    ]
    out += table(
        ["contender", "near 10", f"near {far_index:,}", "note"],
        [[r.name, ns(r.near), "—" if r.far is None else ns(r.far), r.note]
         for r in delays.flat_cost(far_index, budget, repeats)],
    )

    out += ["", f"**Peak memory** while drawing {memory_values:,} values (tracemalloc).", ""]
    out += table(
        ["contender", "peak bytes"],
        [[name, f"{peak:,}"] for name, peak in delays.peak_memory(memory_values).items()],
    )

    out += [
        "",
        f"**Retry drivers**: ns per successful call, and ns per retry ({drivers.RETRIES}"
        " failures, then success; sleep is a no-op). Overhead is over the bare call"
        f" and over the hand-written loop's retry. Goals: under {GOAL_SUCCESS_NS:g} ns"
        f" per successful call and {GOAL_RETRY_NS:g} ns per retry.",
        "",
    ]
    results = drivers.overhead(calls, repeats)
    bare = results[0][1]
    hand_retry = results[1][2]
    rows = []
    for name, success, retry in results:
        ours = name.startswith("backoff_iter")
        goals = ""
        if ours:
            met = success - bare < GOAL_SUCCESS_NS and retry - hand_retry < GOAL_RETRY_NS
            goals = "ok" if met else "MISSED"
        rows.append([name, ns(success), ns(success - bare), ns(retry),
                     ns(retry - hand_retry), goals])
    out += table(
        ["driver", "per call", "overhead", "per retry", "retry overhead", "goal"], rows
    )
    out += ["", f"Whole run: {time.perf_counter() - started:.1f} s.", ""]
    return out


def write_rst(path: str, lines: List[str]) -> None:
    text = "\n".join(lines) + "\n"
    start, end = ".. benchmark-start", ".. benchmark-end"
    try:
        with open(path, encoding="utf-8") as existing:
            current = existing.read()
    except FileNotFoundError:
        current = ""
    if start in current and end in current:
        head, rest = current.split(start, 1)
        _, tail = rest.split(end, 1)
        text = f"{head}{start}\n\n{text}\n{end}{tail}"
    with open(path, "w", encoding="utf-8") as target:
        target.write(text)


def main(argv: Sequence[str] = ()) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run, under 30 s")
    parser.add_argument("--rst", metavar="FILE", help="also write the tables as reST")
    args = parser.parse_args(argv)
    lines = report(args.quick)
    print("\n".join(lines))
    if args.rst:
        write_rst(args.rst, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
