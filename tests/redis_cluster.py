"""A real Redis Cluster on loopback ports, for the tests that need one: three
masters and three replicas, each a redis-server of its own in a scratch
folder, joined by ``redis-cli --cluster create``; every wait is a bounded
poll of a condition."""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile

from redis_server import RedisServer, require_binary

NODE_TIMEOUT_MS = 2000  # a master gone this long is failed over; less flaps on a loaded machine


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def cluster_port(taken: list[int]) -> int:
    """A free loopback port whose cluster bus port, 10,000 above, is free too."""
    while True:
        port = random.randrange(20_000, 50_000)
        if port not in taken and _free(port) and _free(port + 10_000):
            return port


class Cluster:
    """Six redis-server processes, three masters with a replica each."""

    def __init__(self) -> None:
        binary = require_binary()
        cli = shutil.which("redis-cli") or os.path.join(os.path.dirname(binary), "redis-cli")
        self.folder = tempfile.mkdtemp(prefix="backoff_iter-cluster-")
        self.ports: list[int] = []
        for _ in range(6):
            self.ports.append(cluster_port(self.ports))
        self.processes: dict[int, subprocess.Popen] = {}
        try:
            self._start(binary, cli)
        except BaseException:
            self.stop()  # no server left behind
            raise

    def _start(self, binary: str, cli: str) -> None:
        for port in self.ports:
            self.processes[port] = subprocess.Popen(
                [
                    binary,
                    *("--port", str(port), "--bind", "127.0.0.1"),
                    *("--cluster-enabled", "yes", "--cluster-config-file", f"nodes-{port}.conf"),
                    *("--cluster-node-timeout", str(NODE_TIMEOUT_MS)),
                    # a replica may take over however long since it last heard its master
                    *("--cluster-replica-validity-factor", "0"),
                    *("--save", "", "--appendonly", "no", "--loglevel", "warning"),
                ],
                cwd=self.folder,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        for port in self.ports:
            RedisServer.wait_until(lambda port=port: self._pings(port), f"node {port}")
        nodes = [f"127.0.0.1:{p}" for p in self.ports]
        subprocess.run(
            [cli, "--cluster", "create", *nodes, "--cluster-replicas", "1", "--cluster-yes"],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=60,
        )
        RedisServer.wait_until(self.healthy, "the cluster to be ok", timeout=30)
        RedisServer.wait_until(self.replicated, "the replicas to sync", timeout=30)

    def replicated(self) -> bool:
        """Every replica's link to its master is up."""
        import redis

        for port in self.ports:
            info = redis.Redis(host="127.0.0.1", port=port, socket_timeout=0.5).info("replication")
            if info["role"] == "slave" and info.get("master_link_status") != "up":
                return False
        return True

    @staticmethod
    def _pings(port: int) -> bool:
        import redis

        try:
            return bool(redis.Redis(host="127.0.0.1", port=port, socket_timeout=0.5).ping())
        except redis.RedisError:
            return False

    def _state(self, port: int) -> str:
        import redis

        try:
            client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=0.5)
            return str(client.execute_command("CLUSTER INFO").get("cluster_state"))
        except redis.RedisError:
            return ""

    def healthy(self) -> bool:
        """Every live node says the cluster is ok."""
        live = [p for p, process in self.processes.items() if process.poll() is None]
        return all(self._state(port) == "ok" for port in live)

    def client(self, **settings):
        from redis.cluster import ClusterNode, RedisCluster

        live = [p for p, process in self.processes.items() if process.poll() is None]
        return RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", p) for p in live], **settings)

    def master_of(self, key: str) -> int:
        """The port of the master serving *key*'s slot now."""
        client = self.client()
        try:
            return client.get_node_from_key(key).port
        finally:
            client.close()

    def kill(self, port: int) -> None:
        process = self.processes[port]
        process.send_signal(signal.SIGKILL)
        process.wait(10)

    def failed_over(self, key: str, old: int) -> bool:
        """A replica serves *key*'s slot in place of the master on *old*, and the cluster is ok."""
        try:
            return self.healthy() and self.master_of(key) != old
        except Exception:  # the client's view still settling
            return False

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()
                process.wait(10)
        shutil.rmtree(self.folder, ignore_errors=True)
