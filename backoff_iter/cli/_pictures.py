"""The command line's pictures (matplotlib, imported only for ``--plot``).

Each function draws what the command computed and writes it to *path*;
choosing what to draw (which attempts, how many schedules) is the command's.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterable, Sequence
from itertools import accumulate
from typing import Any

import matplotlib

matplotlib.use("Agg")
from matplotlib import pyplot
from matplotlib.axes import Axes
from matplotlib.ticker import MaxNLocator

from backoff_iter.overload import OverloadRun
from backoff_iter.simulation import Result

from ._common import plural


def _percentile(sorted_values: Sequence[float], share: float) -> float:
    """The *share* quantile of sorted values, by linear interpolation."""
    position = share * (len(sorted_values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def show(
    path: str,
    title: str,
    schedules: Sequence[Sequence[float]],
    reference: tuple[str, Sequence[float]] | None,
) -> None:
    """Sleep and time slept per attempt.  One schedule is drawn as a line; many
    (a jittered strategy) as their median and 5-95% band, beside *reference*
    (a label and the sleeps of a plain schedule to compare with)."""
    attempts = range(len(schedules[0]))
    many = len(schedules) > 1
    marker = "o" if len(attempts) <= 60 else None
    figure, (top, bottom) = pyplot.subplots(2, 1, figsize=(12, 7.5), sharex=True)
    for axes, cumulative, what in ((top, False, "sleep"), (bottom, True, "time slept so far")):
        series = [_off_top(accumulate(s) if cumulative else s) for s in schedules]
        columns = [sorted(run[i] for run in series) for i in attempts]
        medians = [_percentile(c, 0.5) for c in columns]
        drawn = list(medians)  # the axis fits what is drawn, not every sample
        if many:
            band = [[_percentile(c, share) for c in columns] for share in (0.05, 0.95)]
            axes.fill_between(
                attempts,
                *band,
                alpha=0.25,
                label=f"5-95% of the {plural(len(schedules), 'schedule')}",
            )
            drawn += band[0] + band[1]
        axes.plot(
            attempts,
            medians,
            marker=marker,
            markersize=3,
            label="median" if many else "the schedule",
        )
        if reference is not None:
            label, sleeps = reference
            line = _off_top(accumulate(sleeps) if cumulative else sleeps)
            axes.plot(
                attempts,
                line,
                linestyle="--",
                color="black",
                label=f"time slept by {label}" if cumulative else f"{label}, for reference",
            )
            drawn += line
        if any(0.0 < value < math.inf for value in drawn):
            axes.set_yscale("log")
            _log_limits(axes, drawn)
        # (else every sleep is 0 s: no log axis can show it, a linear one does)
        axes.set_ylabel(f"{what} (s)")
        axes.grid(alpha=0.3, which="both")
        axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")  # off the data
    bottom.set_xlabel("attempt (from 0)")
    _whole_ticks(bottom)  # attempts are whole numbers
    figure.suptitle(title)
    _save(figure, path)


def _whole_ticks(axes: Any) -> None:
    """Ticks at whole numbers only on *axes*' x axis - also for a single point,
    whose view (less than 1 wide) the locator would fill with fractions."""
    low, high = axes.get_xlim()
    if high - low < 2:  # one point: its tick alone (no attempt -1 beside attempt 0)
        middle = round((low + high) / 2)
        axes.set_xlim(middle - 1, middle + 1)
        axes.set_xticks([middle])
        return
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))


# The top of a log axis: matplotlib's margins and ticks overflow a float near
# 1e308 (an empty picture, or an OverflowError), so values above run off it.
_LOG_TOP = 1e200


def _off_top(values: Iterable[float]) -> list[float]:
    """*values*, those far above :data:`_LOG_TOP` (drawn off the top anyway)
    brought down to where matplotlib's autoscaling still computes in floats."""
    return [min(value, _LOG_TOP * 1e50) for value in values]


def _log_limits(axes: Axes, values: Iterable[float]) -> None:
    """Limits of a log axis a little beyond the values it can show (finite,
    above 0), and never above :data:`_LOG_TOP`."""
    shown = [v for v in values if 0.0 < v < math.inf]
    if shown:
        low, high = min(min(shown), _LOG_TOP), min(max(shown), _LOG_TOP)
        axes.set_ylim(low / 1.5, min(high * 1.5, _LOG_TOP))
        if max(shown) > _LOG_TOP:
            axes.annotate(
                f"values above {_LOG_TOP:g} s run off the top",
                xy=(0.99, 0.97),
                xycoords="axes fraction",
                ha="right",
                va="top",
                fontsize="small",
            )


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
        _whole_ticks(axes)  # client counts
    figure.suptitle(
        f"AWS contention study: {plural(args.runs, 'run')} per point, base {args.base:g} ms,"
        f" cap {args.cap:g} ms, {_seed(args.seed)}"
    )
    _save(figure, path)


def overload(path: str, runs: Sequence[OverloadRun], args: argparse.Namespace) -> None:
    """Goodput and attempts per second over time, one line per (strategy, budget);
    the legend beside the panels, where it hides no data."""
    figure, (good, sent) = pyplot.subplots(2, 1, figsize=(13, 7.5), sharex=True)
    for run in runs:
        label = f"{run.strategy} / {run.budget}"
        seconds = range(len(run.series["arrivals"]))
        good.plot(seconds, run.series["goodput"], label=label, linewidth=1.2)
        sent.plot(seconds, run.series["attempts"], label=label, linewidth=1.2)
    arrivals = runs[0].series["arrivals"]
    end = len(arrivals)  # the run's seconds, the last one maybe in part
    spiked = args.spike > 1 and args.spike_for > 0 and args.spike_at < end
    for axes, series in ((good, "goodput"), (sent, "attempts")):
        axes.plot(range(end), arrivals, color="grey", linestyle=":", label="arrivals")
        if spiked:  # (a spike of x1, of no length or after the end: none happened)
            axes.axvspan(
                args.spike_at,
                min(args.spike_at + args.spike_for, end),
                color="red",
                alpha=0.08,
                label=f"spike ×{args.spike:g}",
            )
        highest = max(max(run.series[series] + arrivals, default=0) for run in runs)
        _capacity(axes, args.capacity, highest)
        axes.grid(alpha=0.3)
    good.set_ylabel("requests succeeding per second")
    sent.set_ylabel("attempts sent per second")
    sent.set_xlabel("time (s)")
    good.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))  # off the data
    figure.suptitle(
        f"Retry storm: rate {args.rate:g}/s, capacity {args.capacity:g}/s, timeout {args.timeout:g} s,"
        f" {plural(args.retries, 'retry', 'retries')}, base {args.base:g} s, cap {args.cap:g} s,"
        f" {_seed(args.seed)}"
    )
    _save(figure, path)


# A capacity above this many times the highest count drawn is left off the panel:
# a line there would squash the counts into its bottom.
_CAPACITY_ABOVE = 1.5


def _capacity(axes: Axes, capacity: float, highest: float) -> None:
    """The server's capacity, a dashed line across *axes* - or, far above the
    *highest* count drawn, named in the legend, the axis fitting the counts."""
    top = max(highest, 1)  # (no count above 0: the axis of a count of 1)
    far = capacity > _CAPACITY_ABOVE * top
    axes.axhline(
        capacity,
        color="black",
        linewidth=0.8,
        linestyle="--",
        label=f"capacity {capacity:g}/s" + (", above the top" if far else ""),
    )
    if far:  # the counts (0 and up) with matplotlib's margins, the line off the top
        axes.set_ylim(-0.05 * top, 1.05 * top)


def _seed(seed: int | None) -> str:
    return "unseeded" if seed is None else f"seed {seed}"


def _save(figure: Any, path: str) -> None:
    try:
        figure.tight_layout()
        figure.savefig(path, dpi=90)
    finally:
        pyplot.close(figure)
