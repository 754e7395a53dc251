"""Issue 27: four processes with botocore clients share one AWS retry quota through Redis.

Each process puts its own DynamoDB client on ``botocore_retries`` with a
``RetryQuota(store=RedisStore(...))`` on one real redis-server (loopback, started and
stopped here), against one local server that fails every request; in that total outage
the fleet's retries stay within one quota's bound, where four botocore clients would
have had four quotas.
"""

from __future__ import annotations

import multiprocessing

import pytest
from aws_server import AwsServer, outage_process
from redis_server import RedisServer, require_binary

PROCESSES, CALLS = 4, 30
ONE_QUOTA = 500 // 14  # the retries one botocore 1.44 quota pays for: 35 (10 units left over)
# Each process spends the share the fleet lent it; a share's last units below one retry's
# cost (13 at most) may go unspent.
FRAGMENTED = (500 - PROCESSES * 13) // 14  # 32
# A process whose exchange found it quiet (no failure since the last: a process held up
# by a loaded machine between its calls) may be given a retry on credit, about twice
# the room nobody holds - those crumbs - for the fleet to owe (docs/budgets.rst, "What
# the lag can cost"): once, as no refund pays the debt back in an outage.
ON_CREDIT = 2 * (PROCESSES * 13) // 14  # 7


@pytest.fixture(scope="module")
def redis_port():
    server = RedisServer(require_binary())
    yield server.port
    server.stop()


@pytest.mark.long_run
@pytest.mark.usefixtures("no_process_hooks")
def test_four_processes_share_one_retry_quota_through_botocore_retries(redis_port):
    """4 processes x 30 failing calls (3 attempts each): 32 to 35 retries in all (and a few on
    credit), not 4 x 35."""
    context = multiprocessing.get_context("spawn")
    start, answers = context.Barrier(PROCESSES), context.Queue()
    with AwsServer(otherwise="500") as server:
        job = (server.url, redis_port, "dynamodb-fleet", CALLS, start)
        processes = [
            context.Process(target=outage_process, args=(answers, *job), daemon=True)
            for _ in range(PROCESSES)
        ]
        for process in processes:
            process.start()
        results = [answers.get(timeout=120) for _ in processes]
        for process in processes:
            process.join(30)
        requests = len(server.seen)
    refused = sum(r for r, _ in results)
    retries = sum(n for _, n in results)
    assert requests == PROCESSES * CALLS + retries  # every retry the quota paid was sent
    assert FRAGMENTED <= retries <= ONE_QUOTA + ON_CREDIT, results  # one quota for the fleet
    # Every call that was not given both its retries was refused by the quota.
    assert refused >= PROCESSES * CALLS - retries // 2
