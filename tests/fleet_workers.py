"""What each process of a test fleet runs (importable by spawned processes)."""

from __future__ import annotations

import contextlib
import math
import queue
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


def wait_for_first_exchange(budget, timeout=30.0):
    """A bounded poll until the budget has heard from the fleet once."""
    deadline = time.monotonic() + timeout
    while budget._ok_at == -math.inf:
        if time.monotonic() > deadline:
            worker = budget._store._worker
            raise AssertionError(
                f"no exchange with Redis: exchange under way since {budget._trying},"
                f" failing {worker._failing} ({type(worker.error).__name__}: {worker.error}),"
                f" thread alive {worker._thread.is_alive()}"
            )
        time.sleep(0.002)


def serve(port, jobs, start, halt, results):
    """A process of a test fleet: runs the jobs from *jobs* until None, on the
    redis-server on *port*, or the Redis Cluster of the ports in a list."""
    import redis

    if isinstance(port, list):
        from redis.cluster import ClusterNode, RedisCluster

        client = RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", p) for p in port])
    else:
        client = redis.Redis(host="127.0.0.1", port=port)
    for index, work, job in iter(jobs.get, None):
        results.put((index, globals()[work](client, *job, start=start, halt=halt)))


def outage(client, kind, name, interval, threads, seconds, *, start, halt):
    """One process of a fleet in a total outage: *threads* threads make failing
    calls for *seconds* (or until *halt* is set), each retrying (at most 3
    times) while the budget allows, with no sleep.  Returns (calls, retries)."""
    return noted_outage(client, kind, name, interval, threads, seconds, start=start, halt=halt)[:2]


def noted_outage(client, kind, name, interval, threads, seconds, rest=0.0, *, start, halt):
    """outage(), resting *rest* seconds between calls, and the warnings its
    store logged: (calls, retries, warnings)."""
    import logging

    from backoff_iter.fleet import RedisStore

    warnings = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = warnings.append
    logger = logging.getLogger("backoff_iter.fleet")
    logger.addHandler(handler)

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
            if rest:
                time.sleep(rest)
        totals.append((calls, retries))

    workers = [threading.Thread(target=run) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    store.close()
    logger.removeHandler(handler)
    return sum(c for c, _ in totals), sum(r for _, r in totals), len(warnings)


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
        """Every process runs outage(*job) (and this one *during*, meanwhile); their (calls, retries)."""
        return self.each("outage", [job] * len(self.jobs), during)

    def each(self, work, jobs, during=None):
        """Process i runs work(*jobs[i]) (this one *during*, meanwhile); their results, in order."""
        self.halt.clear()
        for index, (inbox, job) in enumerate(zip(self.jobs, jobs)):
            inbox.put((index, work, job))
        if during is not None:
            try:
                during()
            except BaseException:  # end this round, so the next test finds the fleet idle
                self.halt.set()
                with contextlib.suppress(queue.Empty):  # a process that died answers nothing
                    for _ in self.jobs:
                        self.results.get(timeout=60)
                raise
        results = dict(self.results.get(timeout=60) for _ in self.jobs)
        return [results[index] for index in range(len(jobs))]

    def close(self):
        for jobs in self.jobs:
            jobs.put(None)
        for process in self.processes:
            process.join(10)


NOTES: dict[int, list] = {}  # a breaker's answers, by id(breaker): (sent at, merged at, state)


def breaker_job(client, name, interval, role, members, steps, *, start, halt):
    """One process of a fleet of breakers: *members* breakers, each with a
    store of its own (a member of the fleet each), make *steps* calls a
    millisecond apart, all failing if *role* is "sick", all succeeding if
    "healthy"; with "cross" they succeed 10 times, then fail 40 times and
    note when (the fleet's ratio crosses then), with "watch" they succeed 10
    times, then only check.  Every
    breaker notes each answer its store's thread merges (sent at, merged at,
    state heard), when it first refused, and how many calls it let go after
    an answer said open.  Returns that, per breaker."""
    from backoff_iter import BrokenCircuitError, CircuitBreaker
    from backoff_iter.fleet import RedisStore
    from backoff_iter.fleet._breakers import FleetCircuitBreaker

    if not hasattr(FleetCircuitBreaker._merge, "noting"):  # once per process
        merge = FleetCircuitBreaker._merge

        def noted(self, sent, answer, sent_at):
            merge(self, sent, answer, sent_at)
            NOTES.setdefault(id(self), []).append((sent_at, time.monotonic(), answer[1]))

        noted.noting = True
        FleetCircuitBreaker._merge = noted

    stores = [RedisStore(client, name, sync_interval=interval) for _ in range(members)]
    breakers = [
        CircuitBreaker(failure_ratio=0.5, minimum_throughput=40, break_duration=60, store=store)
        for store in stores
    ]
    answers = [NOTES.setdefault(id(breaker), []) for breaker in breakers]
    for breaker in breakers:
        wait_for_first_exchange(breaker)
    start.wait(30)
    crossed = None
    refused = [None] * members
    late = [0] * members
    for step in range(steps):
        if halt.is_set():
            break
        if step == 10 and role in ("cross", "watch"):  # the fleet has heard the successes
            deadline = time.monotonic() + 10
            while any(b._counts.first_acked < 10 for b in breakers) and time.monotonic() < deadline:
                time.sleep(0.002)
            start.wait(30)
        for index, breaker in enumerate(breakers):
            heard_open = any(state for _, _, state in answers[index])
            try:
                breaker.check()
            except BrokenCircuitError:
                if refused[index] is None:
                    refused[index] = time.monotonic()
                continue
            late[index] += heard_open
            if role in ("cross", "watch") and step >= 10:
                if role == "cross" and step < 50:
                    breaker.record(False, ConnectionError("down"))
                    if step == 49:
                        crossed = time.monotonic()
            else:
                breaker.record(role != "sick")
        time.sleep(0.001)
    states = [breaker.state for breaker in breakers]
    for store in stores:
        store.close()
    for breaker in breakers:
        NOTES.pop(id(breaker), None)
    return {
        "crossed": crossed,
        "refused": refused,
        "answers": answers,
        "states": states,
        "late": late,
    }
