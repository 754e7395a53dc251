"""The issue's formulas, transcribed literally, as the oracle for the tests.

These are deliberately naive (a power per attempt, ``rng.uniform`` per
draw, Python integers for Fibonacci) so that they read like the contract.
They are only ever called for a few dozen attempts.
"""

from __future__ import annotations

import math
import sys
from decimal import Decimal, localcontext
from fractions import Fraction
from random import Random


def exponential(base: float, factor: float, cap: float, n: int) -> list[float]:
    return [min(cap, base * factor**attempt) for attempt in range(n)]


def linear(base: float, step: float, cap: float, n: int) -> list[float]:
    return [min(cap, base + step * attempt) for attempt in range(n)]


def fibonacci(base: float, cap: float, n: int) -> list[float]:
    a, b, out = 1, 1, []
    for _ in range(n):
        out.append(min(cap, times(base, a)))
        a, b = b, a + b
    return out


def times(x: float, whole: int) -> float:
    """``x * whole`` as Python computes it - the integer rounded to a float, then
    the product rounded - for an integer of any size, by exact fractions: ``inf``
    where the product outgrows a float, not an OverflowError."""
    shift = max(0, whole.bit_length() - 64)
    rounded = Fraction(whole / (1 << shift)) * 2**shift  # int / int is rounded once
    try:
        return float(Fraction(x) * rounded)
    except OverflowError:
        return math.inf


def full_jitter(base, cap, factor, n, rng: Random) -> list[float]:
    return [rng.uniform(0, min(cap, base * factor**attempt)) for attempt in range(n)]


def equal_jitter(base, cap, factor, n, rng: Random) -> list[float]:
    out = []
    for attempt in range(n):
        t = min(cap, base * factor**attempt)
        out.append(t / 2 + rng.uniform(0, t / 2))
    return out


def decorrelated(base, cap, factor, n, rng: Random) -> list[float]:
    sleep, out = base, []
    for _ in range(n):
        sleep = min(cap, rng.uniform(base, sleep * factor))
        out.append(sleep)
    return out


def smooth_g(t: float) -> float:
    return 2**t * math.tanh(math.sqrt(4 * t))


def smooth_jitter(base, cap, n, rng: Random) -> list[float]:
    """Polly's V2 formula, with the issue's rule: once a value reaches the
    cap, the cap repeats (no more draws, no more powers)."""
    previous, out = 0.0, []
    for i in range(n):
        if out and out[-1] == cap:
            out.append(cap)
            continue
        current = smooth_g(i + rng.uniform(0, 1))
        out.append(min(cap, (current - previous) * base / 1.4))
        previous = current
    return out


def smooth_exact(base: float, n: int, rng: Random) -> list[float]:
    """Polly's V2 formula without a cap in exact arithmetic (50 digits), each value
    rounded once: the same draws as :func:`smooth_jitter`, and no float to outgrow -
    the values stop at the largest float, as the strategy's do."""
    largest = sys.float_info.max
    previous, out = Decimal(0), []
    with localcontext() as decimals:
        decimals.prec = 50
        log_2 = Decimal(2).ln()
        for i in range(n):
            if out and out[-1] == largest:
                out.append(largest)
                continue
            t = Decimal(i + rng.random())  # uniform(0, 1); t as the strategy adds it, exactly
            shrink = (-2 * (4 * t).sqrt()).exp()  # tanh(x) = (1 - e**-2x) / (1 + e**-2x)
            current = (t * log_2).exp() * (1 - shrink) / (1 + shrink)
            value = (current - previous) * Decimal(base) / Decimal("1.4")
            out.append(min(largest, float(value)))
            previous = current
    return out
