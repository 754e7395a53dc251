"""Type-checked by mypy --strict in test_typing.py, never run: the public API as users type it."""

from __future__ import annotations

from itertools import islice
from random import Random
from typing import Iterator, List

import backoff_iter
from backoff_iter import (
    attempts,
    capped,
    constant,
    decorrelated,
    elapsed,
    equal_jitter,
    exponential,
    fibonacci,
    full_jitter,
    jittered,
    linear,
    smooth_jitter,
    within,
)

schedules: List[Iterator[float]] = [
    constant(0.5),
    linear(1, 0.5, cap=10),
    exponential(0.1, 2, cap=30),
    fibonacci(1, cap=60),
    full_jitter(0.1, 30, factor=2, rng=Random(1)),
    equal_jitter(0.1, 30, rng=None),
    decorrelated(base=1, cap=30, factor=3.0, rng=Random()),
    smooth_jitter(1, 30, rng=Random(2)),
]
shaped: Iterator[float] = within(capped(jittered(exponential(1), 0.1), 30), 120)
totals: Iterator[float] = elapsed(islice(decorrelated(1), 5))
numbers: Iterator[int] = attempts(shaped, sleep=lambda seconds: None)
names: List[str] = backoff_iter.__all__
