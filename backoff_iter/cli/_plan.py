"""``plan``: a geometric schedule's retry count at a time, and the sleeps around it."""

from __future__ import annotations

import argparse
from typing import Any

from backoff_iter import _checks, planning

from ._common import UsageError, decimal, figure, number, plural, to_json, write

NAME = "plan"
SUMMARY = "Derive a geometric schedule (first sleep, factor) from what you want."


def add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--base", type=number, required=True, help="first sleep a, seconds")
    how = parser.add_mutually_exclusive_group(required=True)
    how.add_argument("--factor", type=number, help="the factor r (a number >= 1)")
    how.add_argument(
        "--ratio",
        type=number,
        help="each sleep as a share of the time already slept: r = 1 + ratio",
    )
    parser.add_argument("--elapsed", type=number, required=True, help="elapsed time T, seconds")
    parser.add_argument(
        "--compare",
        type=number,
        metavar="FACTOR",
        help="another factor: its retry count over the same time",
    )
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")


def prints(args: argparse.Namespace) -> bool:
    return True


def run(args: argparse.Namespace) -> None:
    factor = args.factor if args.ratio is None else planning.factor_for_ratio(args.ratio)
    result = planning.plan(args.base, factor, args.elapsed)
    report: dict[str, Any] = {"base": args.base, "factor": factor}
    if args.ratio is not None:
        report["ratio"] = args.ratio
    report.update(
        {
            "elapsed": args.elapsed,
            "retries": result.retries,
            "exact": result.exact,
            "slept": result.elapsed,
            "sleep_before": result.sleep_before,
            "sleep_after": result.sleep_after,
        }
    )
    if args.compare is not None:
        try:  # the factor of this plan is the one given to --compare
            other = planning.plan(args.base, args.compare, args.elapsed)
        except (_checks.ArgumentValueError, _checks.ArgumentTypeError) as error:
            raise UsageError("--compare", str(error)) from None
        # factor 1 is linear: no long-run ratio of logarithms (null in JSON)
        linear = factor == 1.0 or args.compare == 1.0
        report["compare"] = {
            "factor": args.compare,
            "retries": other.retries,
            "exact": other.exact,
            "ratio": None if linear else planning.retry_count_ratio(factor, args.compare),
        }
    if args.json:
        write(to_json(report) + "\n")
        return
    before = "none" if result.sleep_before is None else decimal(result.sleep_before)
    lines = [
        f"base {figure(args.base)}, factor {figure(factor)}: by elapsed {figure(args.elapsed)}",
        f"  retries:      {result.retries}{_exactly(result.retries, result.exact)}",
        f"  slept:        {decimal(result.elapsed)}",
        f"  sleep before: {before}",
        f"  sleep after:  {decimal(result.sleep_after)}",
    ]
    if args.compare is not None:
        compare = report["compare"]
        line = (
            f"factor {figure(args.compare)} over the same time:"
            f" {plural(compare['retries'], 'retry', 'retries', grouped=False)}"
            f"{_exactly(compare['retries'], compare['exact'])}"
        )
        ratio = compare["ratio"]
        if ratio is not None:
            line += (
                f"; in the long run log {figure(factor)} / log {figure(args.compare)}"
                f" = {decimal(ratio)} times as many"
            )
        lines.append(line)
    write("\n".join(lines) + "\n")


def _exactly(retries: int, exact: float) -> str:
    """What follows a retry count: the real number of retries that fit, in
    parentheses - but never shown as the next whole count, which does not fit
    (9.999999999999998 is "just under 10", not "10.000"), and not at all
    past floats (a count of 600 digits is exact, its fraction unknown).

    >>> _exactly(3, 3.4594), _exactly(9, 9.999999999999998), _exactly(2, 3.0)
    (' (exactly 3.459)', ' (exactly just under 10)', ' (exactly just under 3)')
    >>> _exactly(10**631, float("inf"))
    ''
    """
    if exact == float("inf"):
        return ""
    shown = decimal(exact)
    if float(shown) >= retries + 1:
        return f" (exactly just under {retries + 1})"
    return f" (exactly {shown})"
