"""Shared parts under threads: what 2 to 8 threads on one part keep of one
thread's throughput, against a hand-written locked equivalent.

Each operation is a call's worth of work on the part: a success, then a
failure and the decision on its retry (for the breaker: two checks, a
success and a failure, never enough to open it).  The hand-written
equivalents hold a ``threading.Lock`` around plain arithmetic and call no
Python function while they hold it.  The throughput of n threads sharing
one part, as a share of one thread's, is the part's ratio; a part keeps its
target when its ratio is at least the hand-written one's at every n.  Ours
and the hand-written parts are timed in turn, the best of the rounds kept;
time is the process's CPU time (see :func:`throughput`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from backoff_iter import CircuitBreaker, RetryBudget, RetryQuota, TokenBucket

THREADS = (1, 2, 4, 8)
ERROR = ConnectionError("reset")


class HandBucket:
    """gRPC's token bucket in thousandths, with one lock and no call under it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.milli, self.most, self.ratio = 10_000, 10_000, 100

    def record_success(self, first_attempt: bool, spent: float = 0.0) -> None:
        with self.lock:
            milli = self.milli + self.ratio
            self.milli = milli if milli < self.most else self.most

    def record_failure(self, first_attempt: bool) -> None:
        with self.lock:
            milli = self.milli - 1000
            self.milli = milli if milli > 0 else 0

    def try_retry(self, outcome: object) -> bool:
        with self.lock:
            return self.milli > self.most // 2


class HandBudget:
    """Finagle's budget in ten one-second slots; the clock read outside the lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.slots = [0] * 10
        self.slot = int(time.monotonic())
        self.balance, self.reserve = 0, 100_000

    def _deposit(self, amount: int) -> bool:
        now = int(time.monotonic())
        with self.lock:
            slots = self.slots
            while self.slot < now:  # slots that left the window
                self.slot += 1
                index = self.slot % 10
                self.balance -= slots[index]
                slots[index] = 0
            if amount < 0 and self.reserve + self.balance < -amount:
                return False
            slots[self.slot % 10] += amount
            self.balance += amount
            return True

    def record_success(self, first_attempt: bool, spent: float = 0.0) -> None:
        if first_attempt:
            self._deposit(200)

    def record_failure(self, first_attempt: bool) -> None:
        if first_attempt:
            self._deposit(200)

    def try_retry(self, outcome: object) -> bool:
        return self._deposit(-1000)


class HandQuota:
    """botocore's quota: a lock around a subtraction."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.available = self.most = 10**15

    def record_success(self, first_attempt: bool, spent: float = 0.0) -> None:
        if self.available == self.most:
            return
        with self.lock:
            available = self.available + 1000
            self.available = available if available < self.most else self.most

    def record_failure(self, first_attempt: bool) -> None:
        pass

    def try_retry(self, outcome: object) -> float:
        with self.lock:
            if self.available < 14_000:
                return 0.0
            self.available -= 14_000
            return 14.0


class HandBreaker:
    """A closed breaker's counts in ten buckets of 3 seconds; the clock outside the lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.state = "closed"
        self.successes, self.failures = [0] * 10, [0] * 10
        self.bucket = int(time.monotonic() / 3)
        self.total_successes = self.total_failures = 0

    def check(self) -> None:
        if self.state == "closed":
            return
        raise RuntimeError("open")

    def record(self, success: bool, failure: object = None) -> None:
        now = int(time.monotonic() / 3)
        with self.lock:
            while self.bucket < now:
                self.bucket += 1
                index = self.bucket % 10
                self.total_successes -= self.successes[index]
                self.total_failures -= self.failures[index]
                self.successes[index] = self.failures[index] = 0
            if success:
                self.successes[self.bucket % 10] += 1
                self.total_successes += 1
            else:
                self.failures[self.bucket % 10] += 1
                self.total_failures += 1
                calls = self.total_successes + self.total_failures
                if calls >= 10**12 and self.total_failures / calls >= 1.0:
                    self.state = "open"


def _budget_work(budget: object) -> Callable[[int], None]:
    record_success = budget.record_success  # type: ignore[attr-defined]
    record_failure = budget.record_failure  # type: ignore[attr-defined]
    try_retry = budget.try_retry  # type: ignore[attr-defined]

    def work(n: int) -> None:
        for _ in range(n):
            record_success(True)
            record_failure(False)
            try_retry(ERROR)

    return work


def _breaker_work(breaker: object) -> Callable[[int], None]:
    check, record = breaker.check, breaker.record  # type: ignore[attr-defined]

    def work(n: int) -> None:
        for _ in range(n):
            check()
            record(True)
            check()
            record(False, ERROR)

    return work


#: part -> (what the hand-written one is, ours, the hand-written one): each a
#: fresh part's operations, run n times.
PARTS: dict[
    str, tuple[str, Callable[[], Callable[[int], None]], Callable[[], Callable[[int], None]]]
] = {
    "TokenBucket": (
        "a hand-written locked bucket",
        lambda: _budget_work(TokenBucket(max_tokens=1000, token_ratio=1)),
        lambda: _budget_work(HandBucket()),
    ),
    "RetryBudget": (
        "a hand-written locked budget",
        lambda: _budget_work(RetryBudget(ratio=0.2, min_per_second=10_000)),
        lambda: _budget_work(HandBudget()),
    ),
    "RetryQuota": (
        "a hand-written locked quota",
        lambda: _budget_work(RetryQuota(capacity=1e12)),
        lambda: _budget_work(HandQuota()),
    ),
    "CircuitBreaker": (
        "a hand-written locked breaker",
        lambda: _breaker_work(CircuitBreaker(failure_ratio=1.0, minimum_throughput=10**9)),
        lambda: _breaker_work(HandBreaker()),
    ),
}


def throughput(work: Callable[[int], None], threads: int, operations: int) -> float:
    """Operations per CPU second of *threads* threads sharing *work*, *operations* in
    all.  CPU seconds of the process, not wall seconds: on a shared machine the
    scheduler gives more threads a larger share of the cores, which wall time
    would count as speed; CPU time counts what the contention costs (the lock
    and GIL hand-offs, the context switches)."""
    share = operations // threads
    ready = threading.Barrier(threads + 1)

    def run() -> None:
        ready.wait()
        work(share)

    workers = [threading.Thread(target=run) for _ in range(threads)]
    for worker in workers:
        worker.start()
    ready.wait()
    start = time.process_time()
    for worker in workers:
        worker.join()
    return share * threads / (time.process_time() - start)


def ratios(operations: int, rounds: int) -> dict[str, dict[int, tuple[float, float]]]:
    """part -> threads -> (ours, hand-written): throughput as a share of one thread's."""
    best: dict[tuple[str, str, int], float] = {}
    for _ in range(rounds):
        for part, (_, ours, hand) in PARTS.items():
            for who, make in (("ours", ours), ("hand", hand)):
                for threads in THREADS:
                    key = (part, who, threads)
                    best[key] = max(best.get(key, 0.0), throughput(make(), threads, operations))
    return {
        part: {
            threads: (
                best[(part, "ours", threads)] / best[(part, "ours", 1)],
                best[(part, "hand", threads)] / best[(part, "hand", 1)],
            )
            for threads in THREADS[1:]
        }
        for part in PARTS
    }


def rows(quick: bool) -> list:  # list[costs.Row]
    """A row per part: its share of one thread's throughput at the number of threads
    where it fares worst against the hand-written one, and that one's."""
    from costs import Row

    found = []
    for part, by_threads in ratios(2_000 if quick else 40_000, 1 if quick else 5).items():
        threads = min(by_threads, key=lambda n: by_threads[n][0] / by_threads[n][1])
        ours, hand = by_threads[threads]
        shares = ", ".join(f"{n}: {o:.2f}/{h:.2f}" for n, (o, h) in by_threads.items())
        found.append(
            Row(
                f"{part}, 2-8 threads: share of 1 thread's throughput",
                PARTS[part][0],
                ours,
                hand,
                ">=",
                1.0,
                profile=lambda make=PARTS[part][1]: make()(20_000),
                detail=f"worst at {threads}; ours/hand by threads {shares}",
            )
        )
    return found


if __name__ == "__main__":
    for part, by_threads in ratios(40_000, 3).items():
        print(part, {n: f"{o:.2f}/{h:.2f}" for n, (o, h) in by_threads.items()})
