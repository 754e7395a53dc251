"""Run every benchmark in one process and print the tables.

    python benchmarks/run.py            # the full run (a few minutes)
    python benchmarks/run.py --quick    # a smoke run, under 30 s
    python benchmarks/run.py --rst docs/benchmarks.rst   # the docs' tables
    python benchmarks/run.py --save 3.13.json            # keep this run's targets
    python benchmarks/run.py --rst docs/benchmarks.rst --others 3.9.json 3.13.json
    python benchmarks/run.py --rst docs/benchmarks.rst --readme README.rst   # and the README's

The first table, every target of issue 28 ("pay only for what you use"),
is ``benchmarks/costs.py``; ``--save`` writes its rows as JSON, and
``--others`` adds the rows saved by runs on other Pythons beside this run's
(each within 1.25x of its target, or not).  Peers come from the ``bench`` extra (``pip install '.[bench]'``); a peer that
is not installed is left out of the tables.  ``--rst FILE`` writes the tables
as reStructuredText: between the ``.. benchmark-start`` and
``.. benchmark-end`` lines if FILE has them, else as the whole file.
``--readme FILE`` writes the targets this run missed, each with its figure
and where its time goes, between FILE's ``.. speed-start`` and
``.. speed-end`` lines (which it must have).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from collections.abc import Sequence
from importlib import metadata

import costs
import delays
import drivers
import fleet
import instrument
import overload
import streams
import study
from timing import quiet_retry_log

GOAL_TO_REFERENCE = 1.3  # each strategy within 1.3x of its hand-written generator
STUDY_GOAL = 15.0  # seconds for the default study on 2 processes
PEERS = ("backoff", "tenacity", "stamina", "google-api-core")
# Per driver row: (most ns over the bare call on success, or over the same
# row without a budget; most times the hand-written loop's ns per retry).
SYNC_GOALS = {
    "backoff_iter @retry": (150.0, 2.0),
    "backoff_iter @retry, TokenBucket": (200.0, 2.0),
    "backoff_iter retrying() loop": (500.0, 2.0),
    "backoff_iter module-level policy": (500.0, 2.0),
}
ASYNC_GOALS = {
    "backoff_iter async @retry": (150.0, 2.0),
    "backoff_iter aretrying() loop": (600.0, 2.0),
}
WITHOUT_BUDGET = {"backoff_iter @retry, TokenBucket": "backoff_iter @retry"}
HOOK_RETRY_GOAL = 1000.0  # a trivial hook adds at most 1 us per retry (issue 18)


def instrument_table(results: list[tuple[str, float, float]]) -> list[str]:
    """Rows of (contender, per call, over bare, per retry, over no hook, goal)."""
    by_name = {name: (success, retry) for name, success, retry in results}
    bare = by_name[instrument.BARE][0]
    no_hook = by_name[instrument.NO_HOOK][1]
    rows = []
    for name, success, retry in results:
        goal = ""
        if name in (instrument.NO_OP, instrument.ENABLED):
            more = retry - no_hook
            verdict = "ok" if more <= HOOK_RETRY_GOAL else "MISSED"
            goal = f"{verdict}: {ns(more)} <= {HOOK_RETRY_GOAL:,.0f}"
        rows.append(
            [
                name,
                ns(success),
                ns(success - bare),
                ns(retry),
                "—" if name in (instrument.BARE, instrument.NO_HOOK) else ns(retry - no_hook),
                goal,
            ]
        )
    return table(
        ["contender", "per call", "over bare", "per retry", "over no hook", "retry goal"], rows
    )


def driver_table(
    results: list[tuple[str, float, float]], goals: dict[str, tuple[float, float]]
) -> list[str]:
    """Rows of (name, per call, overhead, success goal, per retry, x hand-written, retry goal)."""
    by_name = {name: (success, retry) for name, success, retry in results}
    bare = results[0][1]
    hand_retry = results[1][2]
    rows = []
    for name, success, retry in results:
        success_goal = retry_goal = ""
        if name in goals:
            most_ns, most_ratio = goals[name]
            # A budget's row is measured against the same driver without one.
            base = by_name[WITHOUT_BUDGET[name]][0] if name in WITHOUT_BUDGET else bare
            over = success - base
            success_goal = f"{'ok' if over <= most_ns else 'MISSED'}: {ns(over)} <= {most_ns:g}"
            ratio = retry / hand_retry
            retry_goal = f"{'ok' if ratio <= most_ratio else 'MISSED'}: <= {most_ratio:g}x"
        rows.append(
            [
                name,
                ns(success),
                ns(success - bare),
                success_goal,
                ns(retry),
                "—" if math.isnan(retry) else f"{retry / hand_retry:.2f}x",
                retry_goal,
            ]
        )
    return table(
        [
            "driver",
            "per call",
            "overhead",
            "success goal",
            "per retry",
            "x hand-written",
            "retry goal",
        ],
        rows,
    )


def import_times(repeats: int) -> dict[str, float]:
    """ms to import each module in a fresh interpreter, less the interpreter's own start."""
    import contextlib
    import subprocess
    import tempfile

    def best(statement: str) -> float:
        runs = []
        for _ in range(repeats):
            start = time.perf_counter()
            # From a folder outside the checkout: `-c` puts the working folder first
            # on sys.path, and the installed package is what is measured.
            subprocess.run([sys.executable, "-c", statement], check=True, cwd=tempfile.gettempdir())
            runs.append(time.perf_counter() - start)
        return min(runs) * 1000

    empty = best("pass")
    times = {}
    for name in ("backoff_iter", "tenacity", "stamina"):
        with contextlib.suppress(subprocess.CalledProcessError):  # not installed
            times[name] = best(f"import {name}") - empty
    return times


def table(header: Sequence[str], rows: list[Sequence[str]]) -> list[str]:
    """A reST simple table (also readable as plain text)."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    rule = "  ".join("=" * w for w in widths)
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    return [rule, line(header), rule, *(line(r) for r in rows), rule]


def ns(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def environment() -> list[str]:
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


#: How far off its target a row may be on the other Pythons (issue 28: 1.25x).
OTHERS_SLACK = 1.25


def costs_section(rows: list[costs.Row], others: Sequence[dict[str, object]]) -> list[str]:
    """The targets' table of this run and, given the saved runs of other Pythons, the
    same targets on each of them."""
    out = [
        "**Pay only for what you use** (``benchmarks/costs.py``): every path against its"
        " reference, each a ratio measured in this one process, the contenders of a group"
        " timed in turn and the best of the rounds kept (this 2-core machine is shared)."
        " A missed target says where the time goes: backoff_iter's functions taking the"
        " most time in a profile of the path, and their share of it. Where a path has a"
        " *floor*, it follows the figure: the least the path can cost in Python, timed in"
        " the same rounds (``benchmarks/floors.py``: a loop of two objects that decides"
        " nothing, a wrapper that only reads the clock, makes the event and calls the hook,"
        " the monitoring library's own calls); a target below it is out of reach of Python"
        " code (*MISSED, target below its floor*).",
        "",
    ]
    out += table(costs.HEADER, costs.table_rows(rows))
    if not others:
        return out
    versions = [str(other["python"]) for other in others]
    out += [
        "",
        f"The same targets on Python {platform.python_version()} (this run) and on "
        + ", ".join(versions)
        + f" (their runs of this command, saved with ``--save``); *within* says whether each"
        f" is within {OTHERS_SLACK:g}x of its target there.",
        "",
    ]
    saved = [
        {(row["path"], row["reference"]): costs.Row(**row) for row in other["rows"]}  # type: ignore[attr-defined]
        for other in others
    ]
    lines = []
    for row in rows:
        cells = [row.path, row.target, f"{row.measured} {'met' if row.met else 'MISSED'}"]
        for found in saved:
            twin = found.get((row.path, row.reference))
            if twin is None:
                cells.append("—")
            else:
                within = "within" if twin.within(OTHERS_SLACK) else "NOT within"
                cells.append(f"{twin.measured} {'met' if twin.met else within}")
        lines.append(cells)
    out += table(["path", "target", platform.python_version(), *versions], lines)
    return out


def missed_section(rows: list[costs.Row]) -> list[str]:
    """The targets this run missed, each with its figure and where its time goes
    (the README's table), after the run's machine and versions."""
    missed = [
        [row.path, row.reference, row.measured, row.target, row.where or "—"]
        for row in rows
        if not row.met
    ]
    out = [
        "Written by ``python benchmarks/run.py --readme README.rst``, in the run whose"
        " tables the benchmarks page shows.",
        "",
        *environment(),
        "",
    ]
    if not missed:
        return [*out, "Every target was met."]
    header = ["path", "against", "measured", "target", "where the time goes"]
    return out + table(header, missed)


#: What a saved run keeps of each row (costs.Row's fields, but its profile).
SAVED = ("path", "reference", "ours", "theirs", "kind", "most", "where", "floor", "floor_what")


def save(path: str, rows: list[costs.Row]) -> None:
    """This run's targets, for a run on another Python to show beside its own."""
    kept = [{key: getattr(row, key) for key in SAVED} for row in rows]
    with open(path, "w", encoding="utf-8") as target:
        json.dump({"python": platform.python_version(), "rows": kept}, target, indent=1)


def report(
    quick: bool, others: Sequence[dict[str, object]] = ()
) -> tuple[list[str], list[costs.Row]]:
    values = 20_000 if quick else 200_000
    repeats = 3 if quick else 7
    far_index = 100_000 if quick else 10_000_000
    budget = 1.0 if quick else 10.0
    memory_values = 20_000 if quick else 1_000_000
    calls = 2_000 if quick else 50_000
    imports_repeats = 3 if quick else 15
    storm_seconds = 5.0 if quick else 120.0

    started = time.perf_counter()
    out = environment()
    out += ["", f"Mode: {'quick' if quick else 'full'}; best of {repeats} repeats.", ""]
    found = costs.rows(quick)
    out += costs_section(found, others)
    out += [""]

    out += [
        f"**ns per delay** (base {delays.BASE}, cap {delays.CAP:g}, {values:,} values"
        " through ``islice``). *reference*: a hand-written inline generator of the"
        f" same formula. Goal: within {GOAL_TO_REFERENCE}x of it (making a strategy and"
        " drawing its first 10 values is in the table above).",
        "",
    ]
    rows = []
    for row in delays.per_value(values, repeats):
        best = row.best_peer
        rows.append(
            [
                row.strategy,
                ns(row.ours),
                ns(row.reference),
                f"{row.to_reference:.2f}x",
                "ok" if row.to_reference <= GOAL_TO_REFERENCE else "MISSED",
                ", ".join(f"{p} {ns(v)}" for p, v in row.peers.items()) or "no peer has it",
                f"{row.ours / row.peers[best]:.2f}x" if best else "—",
            ]
        )
    out += table(
        ["strategy", "ours", "reference", "ours/ref", "goal", "peers (ns)", "ours/best peer"],
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
        [
            [r.name, ns(r.near), "—" if r.far is None else ns(r.far), r.note]
            for r in delays.flat_cost(far_index, budget, repeats)
        ],
    )

    out += ["", f"**Peak memory** while drawing {memory_values:,} values (tracemalloc).", ""]
    out += table(
        ["contender", "peak bytes"],
        [[name, f"{peak:,}"] for name, peak in delays.peak_memory(memory_values).items()],
    )

    out += [
        "",
        f"**Retry drivers**: ns per successful call, and ns per retry ({drivers.RETRIES}"
        " failures, then success; sleep is a no-op). The delays come from a factory"
        " (``lambda: islice(constant(0), 10)``), as the guides write it. *overhead*"
        " is over the bare call; *per retry* is compared with the hand-written loop's."
        " The contenders are timed in turn, round after round, and each keeps its best.",
        "",
    ]
    out += driver_table(drivers.overhead(calls, repeats), SYNC_GOALS)
    out += ["", "The same for ``async def`` functions, in one event loop:", ""]
    out += driver_table(drivers.async_overhead(calls, repeats), ASYNC_GOALS)
    out += [
        "",
        "**Seeing retries** (``backoff_iter.instrument``): the same ``@retry`` with no hook,"
        " a no-op hook, and the Prometheus and OpenTelemetry hooks (on the SDK, spans made"
        " and dropped); *over no hook* is the extra ns per retry. Goal: a trivial hook adds"
        f" at most {HOOK_RETRY_GOAL:,.0f} ns per retry. A success at once is told to the"
        " hooks from ``@retry``'s bare first try, as one event.",
        "",
    ]
    out += instrument_table(instrument.costs(calls // 10, repeats))
    out += ["", "Each hook alone, called on events made in advance (ns per event):", ""]
    out += table(
        ["hook", "success event", "retry event"],
        [
            [name, ns(once), ns(retry)]
            for name, once, retry in instrument.hook_costs(calls, repeats)
        ],
    )
    out += [
        "",
        "**Retried streams** (``benchmarks/streams.py``): ns per item of a generator function"
        " under ``@retry`` on the success path, against the same generator undecorated."
        " Goals: at most 1.5x without ``resume=``, 3x with it.",
        "",
    ]
    out += table(
        ["stream", "ns per item", "x bare", "goal"],
        [
            [
                f"{form} {name}",
                ns(per),
                f"{ratio:.2f}x",
                ""
                if name not in streams.GOALS
                else ("ok" if ratio <= streams.GOALS[name] else "MISSED"),
            ]
            for form, name, per, ratio in streams.per_item(
                2_000 if quick else streams.ITEMS, repeats
            )
        ],
    )
    out += [
        "",
        f"**Overload simulator**: simulated attempts per second of process time"
        f" ({storm_seconds:g} s of the default storm, full jitter, no budget), against a plain"
        " ``heapq`` loop of the same storm written the fast way in ``benchmarks/overload.py``"
        f" (arrivals drawn one at a time). Goal: at least {overload.GOAL:g}x.",
        "",
    ]
    speeds = overload.attempts_per_second(storm_seconds, 2 if quick else 5)
    reference = speeds["plain heapq loop"]
    out += table(
        ["simulator", "attempts/s", "x plain loop", "goal"],
        [
            [
                name,
                f"{speed:,.0f}",
                f"{speed / reference:.2f}x",
                ("ok" if speed >= overload.GOAL * reference else "MISSED")
                if name.startswith("backoff_iter")
                else "",
            ]
            for name, speed in speeds.items()
        ],
    )
    out += [
        "",
        "How its cost grows (``token_bucket`` per client, full jitter): microseconds of process"
        " time per simulated attempt at each size. A flat column is a cost linear in clients"
        " and seconds.",
        "",
    ]
    out += table(
        ["clients", "seconds", "attempts", "us per attempt"],
        [
            [f"{clients:,}", f"{seconds:g}", f"{attempts:,}", f"{per:.2f}"]
            for clients, seconds, _, attempts, per in overload.scaling(quick)
        ],
    )
    out += [
        "",
        "**Fleet budgets** (``benchmarks/fleet.py``): ns per budget call through a"
        " ``RedisStore`` (on a local redis-server) against the same budget in-process,"
        f" in this run. Goal: within {fleet.STORE_GOAL:g}x (no call waits on the network).",
        "",
    ]
    out += fleet.decision_table(calls, repeats)
    out += [
        "",
        "The lag's cost: a simulated storm (healthy, a total outage, half failing, healthy;"
        " 2,000 calls/s) shared by a fleet through the exchange script's arithmetic, against"
        " one budget seeing every event at once, fed the same calls. *excess*: retries beyond"
        f" it per client per sync interval. Goal: at most {fleet.LAG_GOAL:g}.",
        "",
    ]
    out += fleet.lag_table(quick)
    out += [
        "",
        "**Contention study**: wall seconds of ``simulate --seed 2026``"
        + (" at 10, 30 and 50 clients, 20 runs (quick mode)" if quick else " (the default study)")
        + " on the plain model loop written in ``benchmarks/study.py`` (``random.gauss`` for"
        " every hop; the same figures), then on 1 and on 2 processes. Goal: the default study"
        f" within {STUDY_GOAL:g} s on 2 processes, and 2 processes close to twice as fast as 1.",
        "",
    ]
    seconds = study.study_seconds(quick)
    one, two = seconds["1 jobs"], seconds["2 jobs"]
    study_goal = (
        "— (full run)"
        if quick
        else f"{'ok' if two <= STUDY_GOAL else 'MISSED'}: <= {STUDY_GOAL:g} s"
    )
    out += table(
        [
            "study",
            "reference",
            "1 job",
            "x reference",
            "2 jobs",
            "speedup",
            "start 2 processes",
            "goal",
        ],
        [
            [
                "small study" if quick else "default study",
                f"{seconds['reference']:.1f} s",
                f"{one:.1f} s",
                f"{seconds['reference'] / one:.2f}x",
                f"{two:.1f} s",
                f"{one / two:.2f}x",
                f"{seconds['spawn 2']:.2f} s",
                study_goal,
            ]
        ],
    )
    out += [
        "",
        f"**Import time**: ``import NAME`` in a fresh interpreter, minus an empty one"
        f" (best of {imports_repeats} runs). Goal: no more than ``import tenacity``.",
        "",
    ]
    times = import_times(imports_repeats)
    tenacity_ms = times.get("tenacity")
    rows = []
    for name, ms in times.items():
        goal = ""
        if name == "backoff_iter" and tenacity_ms is not None:
            goal = "ok" if ms <= tenacity_ms else "MISSED"
        rows.append([name, f"{ms:.1f}", goal])
    out += table(["module", "ms", "goal"], rows)
    out += ["", f"Whole run: {time.perf_counter() - started:.1f} s.", ""]
    return out, found


def write_rst(
    path: str,
    lines: list[str],
    start: str = ".. benchmark-start",
    end: str = ".. benchmark-end",
    marked: bool = False,
) -> None:
    """Write *lines* into *path* between its *start* and *end* lines, or as the
    whole file if it has none - unless the markers must be there (*marked*):
    then a file without them is left alone and a SystemExit says so."""
    text = "\n".join(lines) + "\n"
    try:
        with open(path, encoding="utf-8") as existing:
            current = existing.read()
    except FileNotFoundError:
        current = ""
    if start in current and end in current:
        head, rest = current.split(start, 1)
        _, tail = rest.split(end, 1)
        text = f"{head}{start}\n\n{text}\n{end}{tail}"
    elif marked:
        raise SystemExit(f"{path} has no {start!r} and {end!r} lines to write between")
    with open(path, "w", encoding="utf-8") as target:
        target.write(text)


def main(argv: Sequence[str] = ()) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run, under 30 s")
    parser.add_argument("--rst", metavar="FILE", help="also write the tables as reST")
    parser.add_argument("--save", metavar="FILE", help="also write the targets' rows as JSON")
    parser.add_argument(
        "--readme", metavar="FILE", help="also write the missed targets into FILE's marked block"
    )
    parser.add_argument(
        "--others", metavar="FILE", nargs="+", default=[], help="saved runs to show beside"
    )
    args = parser.parse_args(argv)
    others = []
    for name in args.others:
        with open(name, encoding="utf-8") as saved:
            others.append(json.load(saved))
    with quiet_retry_log():
        lines, found = report(args.quick, others)
    print("\n".join(lines))
    if args.rst:
        write_rst(args.rst, lines)
    if args.save:
        save(args.save, found)
    if args.readme:
        write_rst(args.readme, missed_section(found), ".. speed-start", ".. speed-end", True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
