"""The fleet tables of the studies page (docs/studies.rst), and their picture.

    python benchmarks/overload_fleet.py                    # the docs' tables and picture
    python benchmarks/overload_fleet.py --quick --out DIR  # a small run (the test suite's check)

The default storm of ``python -m backoff_iter overload`` (800 requests a
second to a server of 1000, doubled from 10 s to 20 s, 120 s, full jitter,
3 retries, seed 2026), split among 1, 100, 1,000 and 10,000 clients, for
each budget and part: with a budget per client (``--budget-scope
process``) and one the fleet shares (``fleet``, exchanged every 0.1 s),
behind a server that serves everything it received (``serve-all``) and
one that drops what has expired (``drop-expired``).  Then the horizon: the
runs of one row that never recover within 120 s, run for longer.

Each run is ``simulate_overload()`` itself; ``--jobs`` spreads them over
processes.  Needs the plot extra (matplotlib) for the picture.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))

from backoff_iter.overload import simulate_overload

SEED = 2026
STRATEGY = "full_jitter"
SERVERS = ("serve-all", "drop-expired")
# Issue 25's goal for a fleet budget: its retries against one budget's (the same
# storm at one client), by clients - at least this, and at most MOST.
LEAST = {100: 0.7, 1000: 0.7, 10000: 0.5}
MOST = 1.1
# The table's rows: what the clients have, and whose budget they spend.
ROWS = [
    ("none", "process"),
    ("token_bucket", "process"),
    ("token_bucket", "fleet"),
    ("retry_budget", "process"),
    ("retry_budget", "fleet"),
    ("retry_quota", "process"),
    ("retry_quota", "fleet"),
    ("cubic", "process"),
    ("sre_throttle", "process"),
    ("sre_throttle", "fleet"),
    ("breaker", "process"),
    ("breaker", "fleet"),
    ("breaker+token_bucket", "process"),
    ("breaker+token_bucket", "fleet"),
]


def run(task: tuple[str, str, int, str, dict[str, float]]) -> dict[str, Any]:
    """One run's figures (no series), and how long it took."""
    budget, scope, clients, server, storm = task
    started = time.perf_counter()
    [result] = simulate_overload(
        [STRATEGY],
        [budget],
        clients=clients,
        budget_scope=scope,
        server=server,
        seed=SEED,
        **storm,
    )
    figures = result._asdict()
    del figures["series"]
    figures["wall_seconds"] = time.perf_counter() - started
    figures["seconds"] = storm.get("seconds", 120.0)
    return figures


def cell(figures: dict[str, Any]) -> str:
    """amplification / goodput in the last 20 s / recovery."""
    amplification, goodput = figures["amplification"], figures["goodput_last_20s"]
    recovery = figures["recovery_seconds"]
    return " / ".join(
        [
            "-" if amplification is None else f"{amplification:.2f}",
            "-" if goodput is None else f"{goodput:.0%}",
            "never" if recovery is None else f"{recovery:g} s",
        ]
    )


def retries(figures: dict[str, Any]) -> int:
    """The retries a run made: its attempts beyond one per request."""
    return int(figures["attempts"] - figures["requests"])


def share(results: dict[tuple[Any, ...], dict[str, Any]], budget: str, clients: int) -> str:
    """A fleet budget's retries at *clients* over one budget's, and whether the goal is met."""
    one = retries(results[budget, "fleet", 1, "serve-all"])
    ratio = retries(results[budget, "fleet", clients, "serve-all"]) / one if one else 0.0
    met = LEAST.get(clients, 0.0) <= ratio <= MOST
    return f"{ratio:.2f} ({'met' if met else 'MISSED'})"


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """An RST simple table."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    rule = "  ".join("=" * width for width in widths)

    def line(row: list[str]) -> str:
        return "  ".join(value.ljust(width) for value, width in zip(row, widths)).rstrip()

    return [rule, line(header), rule, *map(line, rows), rule]


def draw(
    path: str, results: dict[tuple[str, str, int, str], dict[str, Any]], counts: list[int]
) -> None:
    """Amplification, goodput of the last 20 s and recovery against the clients,
    one column per server; solid lines share a fleet budget, dashed ones do not."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    seconds = next(iter(results.values()))["seconds"]
    never = seconds  # where "never recovers" is drawn
    figure, axes = pyplot.subplots(3, 2, figsize=(13, 11), sharex=True)
    colours = dict(zip(dict.fromkeys(b for b, _ in ROWS), pyplot.get_cmap("tab10").colors))
    for column, server in enumerate(SERVERS):
        for budget, scope in ROWS:
            row = [results[budget, scope, clients, server] for clients in counts]
            style = {
                "color": colours[budget],
                "linestyle": "-" if scope == "fleet" else "--",
                "marker": "o" if scope == "fleet" else "s",
                "label": budget if budget == "none" else f"{budget}, {scope}",
            }
            recoveries = [
                never if r["recovery_seconds"] is None else r["recovery_seconds"] for r in row
            ]
            axes[0][column].plot(counts, [r["amplification"] for r in row], **style)
            axes[1][column].plot(counts, [100 * r["goodput_last_20s"] for r in row], **style)
            axes[2][column].plot(counts, recoveries, **style)
        axes[0][column].set_title(f"server: {server}")
        axes[2][column].axhline(never, color="grey", linewidth=0.8)
        axes[2][column].set_ylim(-0.04 * never, 1.12 * never)
        axes[2][column].text(counts[0], never, " never (within the run)", va="bottom", fontsize=8)
        axes[2][column].set_xscale("log")
        axes[2][column].set_xlabel("clients")
        axes[2][column].set_xticks(counts, [f"{c:,}" for c in counts])
    axes[0][0].set_ylabel("amplification (attempts / requests)")
    axes[1][0].set_ylabel("goodput in the last 20 s, % of arrivals")
    axes[2][0].set_ylabel("recovery after the spike, s")
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncol=4, fontsize=9, frameon=False)
    figure.suptitle(
        f"The overload storm ({STRATEGY}, seed {SEED}) split among clients:"
        " a budget per client (dashed) or one for the fleet (solid)"
    )
    figure.tight_layout(rect=(0, 0.08, 1, 0.97))
    figure.savefig(path, dpi=80)
    pyplot.close(figure)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small run")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes")
    parser.add_argument("--horizon", type=float, help="seconds of the longer runs (900)")
    parser.add_argument(
        "--out", default=os.path.join(HERE, "pictures"), help="the picture's folder"
    )
    options = parser.parse_args(argv)
    if options.quick:
        counts = [1, 10]
        storm: dict[str, float] = {"rate": 80.0, "capacity": 100.0, "seconds": 20.0}
        horizon = options.horizon or 30.0
    else:
        counts, storm, horizon = [1, 100, 1000, 10000], {}, options.horizon or 900.0
    tasks = [
        (budget, scope, clients, server, storm)
        for server in SERVERS
        for budget, scope in ROWS
        for clients in counts
    ]
    # The horizon: rows that never recover within the run, given longer.
    longer = {**storm, "seconds": horizon}
    late = [
        ("retry_budget", "fleet", 1, "serve-all", longer),
        ("token_bucket", "process", counts[-1], "serve-all", longer),
        ("retry_budget", "process", counts[-1], "serve-all", longer),
    ]
    started = time.perf_counter()
    with ProcessPoolExecutor(options.jobs) as pool:
        done = list(pool.map(run, tasks + late))
    wall = time.perf_counter() - started
    results = {
        (r["budget"], r["budget_scope"], r["clients"], r["server"]): r for r in done[: len(tasks)]
    }
    header = ["budget / part", "scope"] + [f"{c:,} client{'s' * (c > 1)}" for c in counts]
    lines = [
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()};"
        f" {platform.python_implementation()} {platform.python_version()}.",
        f"Runs: {len(done)} in {wall:.0f} s on {options.jobs} processes"
        f" (the slowest {max(r['wall_seconds'] for r in done):.0f} s).",
    ]
    for server in SERVERS:
        rows = [
            [budget, "\\-" if budget == "none" else scope]  # a bare "-" is a reST bullet
            + [cell(results[budget, scope, clients, server]) for clients in counts]
            for budget, scope in ROWS
        ]
        lines += ["", f"server: {server}", "", *table(header, rows)]
    lines += [
        "",
        "Retries against one budget (serve-all: a fleet budget's retries at N clients over"
        f" the same run's at one client; goal: at least {', '.join(f'{v:g} at {c:,}' for c, v in LEAST.items())},"
        f" at most {MOST:g}):",
        "",
    ]
    lines += table(
        ["budget", *(f"{c:,} clients" for c in counts[1:])],
        [
            [budget, *(share(results, budget, clients) for clients in counts[1:])]
            for budget, scope in ROWS
            if scope == "fleet" and budget in ("token_bucket", "retry_budget", "retry_quota")
        ],
    )
    lines += ["", f"Longer runs ({horizon:g} s):", ""]
    lines += table(
        ["budget", "scope", "clients", "server", "figures"],
        [
            [r["budget"], r["budget_scope"], f"{r['clients']:,}", r["server"], cell(r)]
            for r in done[len(tasks) :]
        ],
    )
    print("\n".join(lines))
    os.makedirs(options.out, exist_ok=True)
    path = os.path.join(options.out, "overload-fleet.png")
    draw(path, results, counts)
    print(f"\nPicture: {path}")


if __name__ == "__main__":
    main()
