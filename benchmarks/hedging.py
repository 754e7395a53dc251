"""Hedged requests against a seeded latency model: the tail without and with a hedge.

    python benchmarks/hedging.py                      # the docs' table and picture
    python benchmarks/hedging.py --quick --out DIR    # a small run (the test suite's check)

The model: each attempt of a call takes about 10 ms (98% of attempts:
lognormal around 10 ms, sigma 0.25) or about 1 s (2%: a slow replica,
lognormal around 1 s, sigma 0.1).  Every attempt's latency is drawn in
advance from ``random.Random(seed)``, so both runs meet the same replicas.
Calls arrive every 2 ms and run with the real ``hedged()``: first without
hedging, then with one hedge sent after the 95th percentile of the first
run's latencies, as a service would set it from its own metrics.
Percentiles are nearest-rank.

The runs are in simulated time: an asyncio event loop whose clock jumps to
its next timer instead of waiting (:class:`VirtualTimeLoop`), so a run of
10,000 calls takes a second of CPU, and no pause of a busy machine (a
shared 2-core one pauses a process for 300 ms now and then) lands in the
tail.  Everything else is asyncio's own: tasks, ``asyncio.wait``,
cancellation.

Needs the plot extra (matplotlib) for the picture.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import platform
import selectors
from collections.abc import Coroutine
from random import Random
from typing import Any, TypeVar

HERE = os.path.dirname(os.path.abspath(__file__))

from backoff_iter import hedged

T = TypeVar("T")
SEED = 2026
FAST, FAST_SIGMA = 0.010, 0.25  # seconds: most attempts
SLOW, SLOW_SIGMA, SLOW_SHARE = 1.0, 0.1, 0.02  # a slow replica, 2% of attempts
ARRIVAL = 0.002  # seconds between two calls
HEDGE_AT = 0.95  # the hedge delay: this percentile of the run without hedging


class _Clock(selectors.BaseSelector):
    """A selector that, when no file is ready, moves a clock on by the
    timeout instead of waiting it out.  The loop asks it to wait exactly
    until its next timer, so the clock jumps from timer to timer."""

    def __init__(self) -> None:
        self.now = 0.0
        self._real = selectors.DefaultSelector()  # the loop's own wake-up pipe

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._real.unregister(fileobj)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = self._real.select(0)
        if ready:
            return ready
        if timeout is None:  # no timer at all: only a real file can wake us
            return self._real.select(None)
        self.now += timeout
        return []

    def get_map(self) -> Any:
        return self._real.get_map()

    def close(self) -> None:
        self._real.close()


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An asyncio loop in simulated time: ``time()`` starts at 0 and jumps to
    the next timer whenever nothing is ready to run."""

    def __init__(self) -> None:
        self._clock = _Clock()
        super().__init__(self._clock)

    def time(self) -> float:
        return self._clock.now


def simulate(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run *coroutine* to its end on a fresh :class:`VirtualTimeLoop`."""
    loop = VirtualTimeLoop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        loop.close()


def model(calls: int, seed: int) -> list[tuple[float, float]]:
    """Each call's two attempt latencies (the first, and its hedge's), in seconds."""
    rng = Random(seed)

    def attempt() -> float:
        if rng.random() < SLOW_SHARE:
            return SLOW * rng.lognormvariate(0.0, SLOW_SIGMA)
        return FAST * rng.lognormvariate(0.0, FAST_SIGMA)

    return [(attempt(), attempt()) for _ in range(calls)]


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank: the smallest value with at least *share* of the values at or below it."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


async def measure(draws: list[tuple[float, float]], delays: list[float]) -> list[tuple[float, int]]:
    """Run every call with ``hedged(..., delays)``: each one's latency and attempts."""
    loop = asyncio.get_running_loop()

    async def call(latencies: tuple[float, float]) -> tuple[float, int]:
        attempts = 0

        async def attempt() -> None:
            nonlocal attempts
            attempts += 1
            await asyncio.sleep(latencies[attempts - 1])

        start = loop.time()
        await hedged(attempt, delays)
        return loop.time() - start, attempts

    begin = loop.time()
    tasks = []
    for index, latencies in enumerate(draws):
        await asyncio.sleep(max(0.0, begin + index * ARRIVAL - loop.time()))
        tasks.append(asyncio.ensure_future(call(latencies)))
    return await asyncio.gather(*tasks)


def both_slow(draws: list[tuple[float, float]]) -> int:
    """Calls that one hedge cannot save: the attempt and its hedge both slow (above
    100 ms, the geometric middle between the two kinds of attempt)."""
    return sum(1 for first, second in draws if min(first, second) > math.sqrt(FAST * SLOW))


def figures(runs: list[tuple[float, int]]) -> tuple[float, float, float, float]:
    """p50, p99, p99.9 (ms) and extra attempts (% of calls)."""
    latencies = [latency for latency, _ in runs]
    extra = sum(attempts for _, attempts in runs) - len(runs)
    p50, p99, p999 = (1000 * percentile(latencies, share) for share in (0.5, 0.99, 0.999))
    return p50, p99, p999, 100 * extra / len(runs)


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A reST simple table (also readable as plain text)."""
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows)]
    rule = "  ".join("=" * width for width in widths)

    def line(cells: list[str]) -> str:
        return "  ".join(cell.ljust(width) for cell, width in zip(cells, widths)).rstrip()

    return [rule, line(header), rule, *(line(row) for row in rows), rule]


def ms(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def draw(path: str, plain: list[float], hedge: list[float], delay: float, seed: int) -> None:
    """The two latency distributions: a histogram, and the share of calls slower than t."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot, ticker

    figure, (counts, tail) = pyplot.subplots(1, 2, figsize=(11, 4.6))
    bins = [4 * (2000 / 4) ** (i / 60) for i in range(61)]  # 4 ms to 2 s, log-spaced
    runs = [  # the wider line under the narrower one: both show where they coincide
        ("no hedging", plain, "tab:red", 2.6),
        (f"one hedge after {1000 * delay:.1f} ms (the p95)", hedge, "tab:blue", 1.2),
    ]
    for label, seconds, colour, width in runs:
        latencies = sorted(1000 * value for value in seconds)
        n = len(latencies)
        counts.hist(
            latencies, bins=bins, histtype="step", linewidth=width, color=colour, label=label
        )
        shares = [(n - 1 - i) / n for i in range(n)]  # from each latency on, the share above it
        tail.step(latencies, shares, where="post", linewidth=width, color=colour, label=label)
    for axes in (counts, tail):
        axes.set_xscale("log")
        axes.set_xlim(4, 2000)
        axes.xaxis.set_major_locator(
            ticker.FixedLocator([5, 10, 20, 50, 100, 200, 500, 1000, 2000])
        )
        axes.xaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
        axes.xaxis.set_minor_formatter(ticker.NullFormatter())
        axes.set_xlabel("latency of a call (ms, log scale)")
        axes.axvline(1000 * delay, color="grey", linestyle=":", linewidth=1.2)
        axes.annotate(
            "hedge\ndelay",
            (1000 * delay, 1),
            xycoords=("data", "axes fraction"),
            xytext=(3, -4),
            textcoords="offset points",
            va="top",
            fontsize=8,
            color="grey",
        )
        axes.grid(True, which="major", alpha=0.3)
    counts.set_yscale("log")
    counts.set_ylabel("calls per bin (log scale)")
    counts.set_title("Latency histogram")
    counts.legend(loc="upper right", fontsize=8, framealpha=0.9)
    tail.set_yscale("log")
    tail.set_ylim(0.5 / len(plain), 1.5)
    tail.set_ylabel("share of calls slower than t (log scale)")
    tail.set_title("The tail: share of calls slower than t")
    for share, name in ((0.01, "p99"), (0.001, "p99.9")):
        tail.axhline(share, color="black", linestyle="--", linewidth=0.7)
        tail.annotate(name, (4.3, share), xytext=(0, 3), textcoords="offset points", fontsize=8)
    tail.legend(loc="upper right", fontsize=8, framealpha=0.9)
    figure.suptitle(
        f"hedged(): {len(plain):,} calls; each attempt ~{1000 * FAST:.0f} ms, or"
        f" ~{SLOW:.0f} s for {100 * SLOW_SHARE:.0f}% of them; seed {seed} (random.Random)",
        fontsize=10,
    )
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    pyplot.close(figure)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, help="calls per run (10,000; 500 with --quick)")
    parser.add_argument("--seed", type=int, default=SEED, help=f"the model's seed ({SEED})")
    parser.add_argument("--quick", action="store_true", help="a small run")
    parser.add_argument(
        "--out", default=os.path.join(HERE, "pictures"), help="the picture's folder"
    )
    options = parser.parse_args(argv)
    calls = options.calls or (500 if options.quick else 10_000)
    draws = model(calls, options.seed)

    plain = simulate(measure(draws, []))
    delay = percentile([latency for latency, _ in plain], HEDGE_AT)
    hedge = simulate(measure(draws, [delay]))

    rows = []
    for label, runs in (
        ("no hedging", plain),
        (f"one hedge after {1000 * delay:.1f} ms (p95)", hedge),
    ):
        p50, p99, p999, extra = figures(runs)
        rows.append([label, ms(p50), ms(p99), ms(p999), f"{extra:.1f}%"])
    lines = [
        f"Model: {calls:,} calls, one every {1000 * ARRIVAL:g} ms; each attempt"
        f" ~{1000 * FAST:g} ms (lognormal, sigma {FAST_SIGMA:g}) or, {100 * SLOW_SHARE:g}%"
        f" of them, ~{SLOW:g} s (sigma {SLOW_SIGMA:g}); random.Random({options.seed});"
        " simulated time.",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()};"
        f" {platform.python_implementation()} {platform.python_version()}.",
        "",
        *table(["run", "p50 ms", "p99 ms", "p99.9 ms", "extra attempts"], rows),
        "",
        f"Calls whose attempt and hedge both met a slow replica: {both_slow(draws)}.",
    ]
    print("\n".join(lines))
    os.makedirs(options.out, exist_ok=True)
    path = os.path.join(options.out, "hedging.png")
    draw(
        path,
        [latency for latency, _ in plain],
        [latency for latency, _ in hedge],
        delay,
        options.seed,
    )
    print(f"\nPicture: {path}")


if __name__ == "__main__":
    main()
