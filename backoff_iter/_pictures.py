"""The command line's pictures (matplotlib, imported only for ``--plot``)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from itertools import accumulate, islice
from random import Random
from typing import Any

import matplotlib

matplotlib.use("Agg")
from matplotlib import pyplot

from . import strategies
from .overload import OverloadRun
from .simulation import Result

_POINTS = 60  # attempts drawn when neither -n nor --until-elapsed says


def _percentile(sorted_values: Sequence[float], share: float) -> float:
    """The *share* quantile of sorted values, by linear interpolation."""
    position = share * (len(sorted_values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def _envelope(name: str, options: dict[str, Any], n: int) -> tuple[str, list[float]]:
    """The deterministic schedule a jittered one draws under: its window's top."""
    base = options.get("base", 1.0)
    cap = options.get("cap", math.inf)
    if name == "decorrelated":
        factor = options.get("factor", 3.0)
        label = f"window top min(cap, base·{factor:g}^(n+1))"
        return label, [min(cap, base * factor ** min(i + 1, 1100)) for i in range(n)]
    factor = options.get("factor", 2.0)
    label = f"exponential min(cap, base·{factor:g}^n)"
    return label, list(islice(strategies.exponential(base, factor, cap=cap), n))


def show(
    path: str,
    name: str,
    options: dict[str, Any],
    limit: int | None,
    until: float | None,
    samples: int,
) -> None:
    """Sleep and time slept per attempt; for a jittered strategy the median and
    the 5-95% band of *samples* seeded schedules, beside the envelope."""
    n = limit if limit is not None else _POINTS
    jittered = "rng" in strategies.parameters(name)
    seed = options.pop("rng", None)
    seed_text = "" if seed is None else ", seeded"
    runs = samples if jittered else 1
    draws = Random(0) if seed is None else seed
    sleeps = [list(islice(strategies.make(name, rng=draws, **options), n)) for _ in range(runs)]
    if until is not None:  # as many attempts as reach the time asked, in the median
        totals = [list(accumulate(s)) for s in sleeps]
        medians = [_percentile(sorted(t[i] for t in totals), 0.5) for i in range(n)]
        n = next((i + 1 for i, total in enumerate(medians) if total >= until), n)
        sleeps = [s[:n] for s in sleeps]
    attempts = list(range(n))
    figure, (top, bottom) = pyplot.subplots(2, 1, figsize=(9, 7.5), sharex=True)
    for axes, series, what in (
        (top, sleeps, "sleep"),
        (bottom, [list(accumulate(s)) for s in sleeps], "time slept so far"),
    ):
        columns = [sorted(run[i] for run in series) for i in attempts]
        if jittered:
            low = [_percentile(c, 0.05) for c in columns]
            high = [_percentile(c, 0.95) for c in columns]
            axes.fill_between(attempts, low, high, alpha=0.25, label=f"5-95% of {runs} schedules")
        axes.plot(
            attempts,
            [_percentile(c, 0.5) for c in columns],
            marker="o",
            markersize=3,
            label="median" if jittered else name,
        )
        if jittered:
            label, top_line = _envelope(name, dict(options), n)
            if what != "sleep":
                top_line = list(accumulate(top_line))
            axes.plot(attempts, top_line, linestyle="--", color="black", label=label)
        axes.set_yscale("log")
        axes.set_ylabel(f"{what} (s)")
        axes.grid(alpha=0.3, which="both")
        axes.legend(loc="upper left", fontsize="small")
    bottom.set_xlabel("attempt (from 0)")
    given = ", ".join(f"{k}={v:g}" for k, v in options.items())
    figure.suptitle(f"{name}({given}){seed_text}")
    _save(figure, path)


def simulation(path: str, results: Sequence[Result], args: argparse.Namespace) -> None:
    """Work and time to the last success against the client count, one line per strategy."""
    figure, (work, duration) = pyplot.subplots(1, 2, figsize=(12, 4.8))
    for name in dict.fromkeys(r.strategy for r in results):
        rows = [r for r in results if r.strategy == name]
        clients = [r.clients for r in rows]
        work.plot(clients, [r.work for r in rows], marker="o", label=name)
        duration.plot(clients, [r.time / 1000 for r in rows], marker="o", label=name)
    work.set(title="Work: writes the server received", xlabel="clients", ylabel="writes")
    duration.set(
        title="Time until the last client succeeded", xlabel="clients", ylabel="seconds (log scale)"
    )
    duration.set_yscale("log")
    for axes in (work, duration):
        axes.legend(fontsize="small")
        axes.grid(alpha=0.3, which="both")
    seed = "unseeded" if args.seed is None else f"seed {args.seed}"
    figure.suptitle(
        f"AWS contention study: {args.runs} runs per point, base {args.base:g} ms,"
        f" cap {args.cap:g} ms, {seed}"
    )
    _save(figure, path)


def overload(path: str, runs: Sequence[OverloadRun], args: argparse.Namespace) -> None:
    """Goodput and attempts per second over time, one line per (strategy, budget)."""
    figure, (good, sent) = pyplot.subplots(2, 1, figsize=(11, 7.5), sharex=True)
    for run in runs:
        label = f"{run.strategy} / {run.budget}"
        seconds = range(len(run.series["arrivals"]))
        good.plot(seconds, run.series["goodput"], label=label, linewidth=1.2)
        sent.plot(seconds, run.series["attempts"], label=label, linewidth=1.2)
    arrivals = runs[0].series["arrivals"]
    for axes in (good, sent):
        axes.plot(range(len(arrivals)), arrivals, color="grey", linestyle=":", label="arrivals")
        axes.axvspan(
            args.spike_at,
            args.spike_at + args.spike_for,
            color="red",
            alpha=0.08,
            label=f"spike ×{args.spike:g}",
        )
        axes.axhline(
            args.capacity,
            color="black",
            linewidth=0.8,
            linestyle="--",
            label=f"capacity {args.capacity:g}/s",
        )
        axes.grid(alpha=0.3)
    good.set_ylabel("requests succeeding per second")
    sent.set_ylabel("attempts sent per second")
    sent.set_xlabel("time (s)")
    good.legend(fontsize="small", loc="upper right", ncol=2)
    seed = "unseeded" if args.seed is None else f"seed {args.seed}"
    figure.suptitle(
        f"Retry storm: rate {args.rate:g}/s, capacity {args.capacity:g}/s, timeout {args.timeout:g} s,"
        f" {args.retries} retries, base {args.base:g} s, cap {args.cap:g} s, {seed}"
    )
    _save(figure, path)


def _save(figure: Any, path: str) -> None:
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    pyplot.close(figure)
