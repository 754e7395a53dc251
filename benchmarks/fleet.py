"""Fleet parts: what a decision costs with a store, and what the lag between
exchanges can cost.

- ns per call of a store part (a ``RedisStore`` on a local ``redis-server``
  this module starts) against the same part in-process, measured in one
  run, their repeats interleaved: a budget's success path and a failure
  with its decision, a breaker's and a throttle's check with its record.
  No call waits on the network; the store's thread exchanges meanwhile.
- Over-admission: a fleet of clients sharing one budget through the
  exchange script's arithmetic (``backoff_iter.fleet._SharedState``, in
  simulated time), against one budget that sees every event at once, fed
  the same calls.  The excess, per client per sync interval, is the lag's
  cost.

    python benchmarks/fleet.py          # both tables
"""

from __future__ import annotations

import math
import random
import shutil
import socket
import subprocess
import time
from collections.abc import Callable
from typing import Any

from timing import best_ns

from backoff_iter import AdaptiveThrottle, CircuitBreaker, RetryBudget, RetryQuota, TokenBucket
from backoff_iter.fleet import RedisStore, _SharedState

KINDS: dict[str, Callable[..., object]] = {
    "TokenBucket": lambda store, clock=time.monotonic: TokenBucket(
        max_tokens=100, token_ratio=0.1, store=store
    ),
    "RetryBudget": lambda store, clock=time.monotonic: RetryBudget(
        ratio=0.1, min_per_second=10, window=10, clock=clock, store=store
    ),
    "RetryQuota": lambda store, clock=time.monotonic: RetryQuota(
        capacity=500, retry_cost=5, store=store
    ),
}


class _Server:
    """A redis-server on a free loopback port, for the length of a ``with``."""

    def __enter__(self) -> _Server:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def __exit__(self, *exc_info: object) -> None:
        self.process.kill()
        self.process.wait()


_BATCH = 2_000  # calls in one timed run

#: The other parts, made to stay closed and to let every request go.
PARTS: dict[str, Callable[..., object]] = {
    "CircuitBreaker": lambda store: CircuitBreaker(
        failure_ratio=1.0, minimum_throughput=10**9, store=store
    ),
    "AdaptiveThrottle": lambda store: AdaptiveThrottle(k=10**9, store=store),
}


def decision_ns(calls: int, repeats: int) -> list[tuple[str, str, float, float]] | None:
    """(part, path, in-process ns, store ns) per call; None without redis-server or redis-py."""
    try:
        import redis
    except ImportError:
        return None
    if shutil.which("redis-server") is None:
        return None
    rows = []
    with _Server() as server:
        client = redis.Redis(host="127.0.0.1", port=server.port)
        paths = [(kind, make, _BUDGET_PATHS) for kind, make in KINDS.items()]
        paths += [(kind, make, _PART_PATHS) for kind, make in PARTS.items()]
        for kind, make, runs in paths:
            with RedisStore(client, f"bench-{kind}", sync_interval=0.1) as store:
                local, shared = make(None), make(store)
                deadline = time.monotonic() + 10
                while shared._ok_at == -math.inf and time.monotonic() < deadline:  # type: ignore[attr-defined]
                    time.sleep(0.005)  # its first exchange, so the answer is live
                for path, run in runs:
                    # Short runs, in-process and store in turn, the best of each: both
                    # see the same load (the store's thread, other jobs on the machine).
                    batch = min(calls, _BATCH)
                    best = [math.inf, math.inf]
                    for _ in range(max(repeats, repeats * calls // batch)):
                        for side, part in enumerate((local, shared)):
                            ns = best_ns(lambda p=part, r=run, n=batch: r(p, n), batch, 1)
                            best[side] = min(best[side], ns)
                    rows.append((kind, path, best[0], best[1]))
    return rows


def _successes(budget: object, calls: int) -> None:
    record = budget.record_success  # type: ignore[attr-defined]
    for _ in range(calls):
        record(True)


def _failures(budget: object, calls: int) -> None:
    record, decide = budget.record_failure, budget.try_retry  # type: ignore[attr-defined]
    for _ in range(calls):
        record(True)
        decide(None)


def _checked(accepted: bool) -> Callable[[object, int], None]:
    def run(part: object, calls: int) -> None:
        check, record = part.check, part.record  # type: ignore[attr-defined]
        for _ in range(calls):
            check()
            record(accepted)

    return run


_BUDGET_PATHS = (("success", _successes), ("failure + decision", _failures))
_PART_PATHS = (("check + success", _checked(True)), ("check + failure", _checked(False)))


#: The share of attempts that fail, each for a quarter of a storm: healthy, a
#: total outage, half failing, healthy again.
PHASES = (0.01, 1.0, 0.5, 0.01)


def storm(
    budget_of: Callable[[int], Any],
    clients: int,
    seconds: float,
    rate: float,
    seed: int,
    clock: list[float],
) -> tuple[int, int]:
    """Calls arrive at *rate* per second of simulated time (*clock*), each from
    one of *clients*; an attempt fails as the phase says (drawn per call and
    attempt from *seed*, so every run sees the same outcomes); a failure is
    retried at once, up to 3 times, if the client's budget allows.  Returns
    (calls, retries)."""
    arrivals = random.Random(seed)
    now, calls, retries = 0.0, 0, 0
    while True:
        now += arrivals.expovariate(rate)
        if now >= seconds:
            return calls, retries
        clock[0] = now
        failing = PHASES[int(len(PHASES) * now / seconds)]
        budget = budget_of(arrivals.randrange(clients))
        outcomes = random.Random(seed * 1_000_003 + calls)
        calls += 1
        spent = 0.0
        for attempt in range(4):
            if outcomes.random() >= failing:
                budget.record_success(attempt == 0, spent)
                break
            budget.record_failure(attempt == 0)
            took = budget.try_retry(None) if attempt < 3 else 0
            if not took:
                break
            spent += took
            retries += 1


def over_admission(
    clients: int, interval: float, seconds: float = 20.0, rate: float = 2000.0, seed: int = 7
) -> list[tuple[str, int, int, int, float]]:
    """Per budget: (name, calls, retries of one budget seeing every event at
    once, retries of *clients* sharing it with a lag of *interval* seconds,
    excess retries per client per sync interval)."""
    rows = []
    for kind, make in KINDS.items():
        clock = [0.0]

        def now(clock: list[float] = clock) -> float:
            return clock[0]

        single = make(None, now)
        calls, alone = storm(
            lambda client, single=single: single, clients, seconds, rate, seed, clock
        )
        clock[0] = 0.0  # the fleet's run starts at time 0 too
        fleet = _SharedState(interval, clock=now)
        budgets = [make(fleet, now) for _ in range(clients)]
        _, shared = storm(budgets.__getitem__, clients, seconds, rate, seed, clock)
        intervals = seconds / interval
        rows.append((kind, calls, alone, shared, max(0, shared - alone) / (clients * intervals)))
    return rows


#: Goals: a store part's call within this many times the same part's
#: in-process call, measured in the same run (no call waits on the network).
STORE_GOAL = 1.2
#: The lag's cost: excess retries per client per sync interval, at most.
LAG_GOAL = 0.01


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    rule = "  ".join("=" * w for w in widths)
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    return [rule, line(header), rule, *(line(r) for r in rows), rule]


def decision_table(calls: int, repeats: int) -> list[str]:
    """ns per call, in-process and through a RedisStore, with the goal."""
    measured = decision_ns(calls, repeats)
    if measured is None:
        return ["(no redis-server or redis-py here: not measured)"]
    rows = [
        [
            f"{kind} {path}",
            f"{local:,.0f}",
            f"{shared:,.0f}",
            f"{shared / local:.2f}x",
            "ok" if shared <= STORE_GOAL * local else "MISSED",
        ]
        for kind, path, local, shared in measured
    ]
    return table(["call", "in-process ns", "store ns", "store/in-process", "goal"], rows)


def lag_table(quick: bool) -> list[str]:
    """The lag's cost in a simulated storm, per fleet size and sync interval."""
    seconds = 1.0 if quick else 20.0  # (quick: a smoke run, its figures not read)
    rows = []
    for clients, interval in ((10, 0.1), (100, 0.1), (1000, 0.1), (100, 1.0)):
        for kind, calls, alone, shared, excess in over_admission(clients, interval, seconds):
            rows.append(
                [
                    kind,
                    str(clients),
                    f"{interval:g}",
                    f"{calls:,}",
                    f"{alone:,}",
                    f"{shared:,}",
                    f"{excess:.4f}",
                    "ok" if excess <= LAG_GOAL else "MISSED",
                ]
            )
    header = ["fleet budget", "clients", "sync s", "calls", "one budget", "fleet", "excess", "goal"]
    return table(header, rows)


def main() -> None:
    print("\n".join(decision_table(20_000, 5)))
    print()
    print("\n".join(lag_table(quick=False)))


if __name__ == "__main__":
    main()
