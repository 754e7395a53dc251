"""What each process of a test fleet runs (importable by spawned processes)."""

from __future__ import annotations

import math
import threading
import time

BUDGETS = {  # the budgets the fleet tests share, by kind
    "retry_budget": {"ratio": 0.01, "min_per_second": 50.0, "window": 10.0},
    "token_bucket": {"max_tokens": 100.0, "token_ratio": 0.1},
    "retry_quota": {"capacity": 200.0, "retry_cost": 5.0, "timeout_cost": 10.0},
}


def make_budget(kind, store, clock=time.monotonic):
    from backoff_iter import RetryBudget, RetryQuota, TokenBucket

    arguments = BUDGETS[kind]
    if kind == "retry_budget":
        return RetryBudget(**arguments, clock=clock, store=store)
    if kind == "token_bucket":
        return TokenBucket(**arguments, store=store)
    return RetryQuota(**arguments, store=store)


def wait_for_first_exchange(budget, timeout=10.0):
    """A bounded poll until the budget has heard from the fleet once."""
    deadline = time.monotonic() + timeout
    while budget._ok_at == -math.inf:
        if time.monotonic() > deadline:
            raise AssertionError("no exchange with Redis")
        time.sleep(0.002)


def serve(port, jobs, start, halt, results):
    """A process of a test fleet: runs outage jobs from *jobs* until None."""
    import redis

    client = redis.Redis(host="127.0.0.1", port=port)
    for job in iter(jobs.get, None):
        results.put(outage(client, *job, start=start, halt=halt))


def outage(client, kind, name, interval, threads, seconds, *, start, halt):
    """One process of a fleet in a total outage: *threads* threads make failing
    calls for *seconds* (or until *halt* is set), each retrying (at most 3
    times) while the budget allows, with no sleep.  Returns (calls, retries)."""
    from backoff_iter.fleet import RedisStore

    store = RedisStore(client, name, sync_interval=interval)
    budget = make_budget(kind, store)
    wait_for_first_exchange(budget)
    start.wait(30)
    end = time.monotonic() + seconds
    totals = []
    error = ConnectionError("down")

    def run():
        calls = retries = 0
        while time.monotonic() < end and not halt.is_set():
            calls += 1
            budget.record_failure(True)
            for _ in range(3):
                if not budget.try_retry(error):
                    break
                retries += 1
                budget.record_failure(False)
        totals.append((calls, retries))

    workers = [threading.Thread(target=run) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    store.close()
    return sum(c for c, _ in totals), sum(r for _, r in totals)


class Fleet:
    """*processes* spawned processes, started once, each running one job per round."""

    def __init__(self, processes, port):
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        self.start = context.Barrier(processes)
        self.halt = context.Event()  # ends a job before its time
        self.results = context.Queue()
        self.jobs = [context.Queue() for _ in range(processes)]
        self.processes = [
            context.Process(
                target=serve, args=(port, jobs, self.start, self.halt, self.results), daemon=True
            )
            for jobs in self.jobs
        ]
        for process in self.processes:
            process.start()

    def run(self, *job, during=None):
        """Every process runs *job* (and this one *during*, meanwhile); their (calls, retries)."""
        self.halt.clear()
        for jobs in self.jobs:
            jobs.put(job)
        if during is not None:
            during()
        return [self.results.get(timeout=60) for _ in self.jobs]

    def close(self):
        for jobs in self.jobs:
            jobs.put(None)
        for process in self.processes:
            process.join(10)
