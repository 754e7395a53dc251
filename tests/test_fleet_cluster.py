"""A fleet on a real Redis Cluster (three masters, a replica each, on loopback
ports): a part's keys in one slot, and a master killed mid-run."""

from __future__ import annotations

import pytest
from fleet_workers import BUDGETS, Fleet, wait_for_first_exchange
from redis_cluster import Cluster
from redis_server import RedisServer

from backoff_iter import RetryQuota
from backoff_iter.fleet import RedisStore

PROCESSES, THREADS = 4, 3


@pytest.fixture(scope="module")
def cluster():
    """A 3-master cluster with replicas, for the module."""
    cluster = Cluster()
    yield cluster
    cluster.stop()


def test_a_store_on_a_cluster_keeps_a_parts_keys_in_one_slot(cluster):
    """RedisStore takes a redis.cluster.RedisCluster; the part's five keys hash to one slot, so its script runs on one node."""
    client = cluster.client()
    with RedisStore(client, "one-slot", sync_interval=0.02) as store:
        quota = RetryQuota(store=store)
        wait_for_first_exchange(quota)
        assert quota.try_retry(None) == 14.0  # the default retry_cost
        keys = [
            f"backoff_iter:{{one-slot}}:retry_quota:{k}" for k in ("counts", "members", "ledger")
        ]
        RedisServer.wait_until(lambda: all(client.exists(k) for k in keys), "the keys")
        more = [keys[0].replace("counts", k) for k in ("demand", "gone")]
        assert len({client.keyslot(key) for key in [*keys, *more]}) == 1
        assert repr(store).startswith("RedisStore(<redis.cluster.RedisCluster 127.0.0.1:")
    client.close()


@pytest.mark.long_run
def test_a_master_killed_mid_run_fails_over_and_the_quota_holds(cluster):
    """4 processes share a quota on the cluster; the master of its slot is killed mid-run: decisions go on, each process logs one or two warnings, a replica takes over, and the fleet's retries stay within one quota (plus one a process)."""
    fleet = Fleet(PROCESSES, cluster.ports)
    name = "failover"
    key = f"backoff_iter:{{{name}}}:retry_quota:counts"
    seen = {}

    def kill():
        members = key.replace(":counts", ":members")
        RedisServer.wait_until(lambda: _card(cluster, members) == PROCESSES, "the fleet", 60)
        old = cluster.master_of(key)
        cluster.kill(old)
        RedisServer.wait_until(lambda: cluster.failed_over(key, old), "the failover", timeout=30)
        seen["new"] = cluster.master_of(key)
        RedisServer.wait_until(lambda: _exists(cluster, key), "exchanges after it", timeout=30)
        fleet.halt.set()

    try:
        job = (
            "retry_quota",
            name,
            0.02,
            THREADS,
            60.0,
            0.001,
        )  # resting: the cluster needs a core too
        results = fleet.each("noted_outage", [job] * PROCESSES, kill)
    finally:
        fleet.close()
    retries = sum(r for _, r, _ in results)
    arguments = BUDGETS["retry_quota"]
    assert retries <= arguments["capacity"] / arguments["retry_cost"] + PROCESSES, retries
    assert all(calls > 0 and 1 <= warnings <= 2 for calls, _, warnings in results), results
    assert seen["new"] in cluster.ports


def _exists(cluster, key):
    client = cluster.client()
    try:
        return bool(client.exists(key))
    finally:
        client.close()


def _card(cluster, key):
    client = cluster.client()
    try:
        return client.zcard(key)
    finally:
        client.close()


def test_a_store_on_a_cluster_client_closed_still_has_a_repr(cluster):
    """client.close() forgets the cluster's default node: the store's repr (and its part's, in a log line) still says what it is (it raised AttributeError)."""
    client = cluster.client()
    with RedisStore(client, "closed-client", sync_interval=0.02) as store:
        quota = RetryQuota(store=store)
        client.close()
        assert (
            repr(store)
            == "RedisStore(<redis.cluster.RedisCluster>, 'closed-client', sync_interval=0.02)"
        )
        assert repr(quota).endswith(f"shared through {store!r}")
