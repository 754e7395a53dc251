"""A real redis-server on a free loopback port, for the tests that need one.

Where the binary is missing the tests skip with a reason saying what to
install; with BACKOFF_ITER_REQUIRE_REDIS=1 (CI) that skip is a failure.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time

import pytest

BINARY = "redis-server"


def require_binary():
    """The redis-server path, or a skip (a failure when CI requires Redis)."""
    path = shutil.which(BINARY)
    if path is None:
        reason = "redis-server is not installed: apt-get install redis-server"
        if os.environ.get("BACKOFF_ITER_REQUIRE_REDIS") == "1":
            pytest.fail(f"{reason} (BACKOFF_ITER_REQUIRE_REDIS=1)")
        pytest.skip(reason)
    return path


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class RedisServer:
    """One redis-server process: start, pause (SIGSTOP), resume, kill, restart
    on the same port; every wait is a bounded poll of a condition."""

    def __init__(self, path):
        self.path = path
        self.port = free_port()
        self.process = None
        self.start()

    def start(self):
        self.process = subprocess.Popen(
            [
                self.path,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
                "--loglevel",
                "warning",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.wait_until(self.answers, "redis-server to answer PING")

    def client(self, **settings):
        import redis

        return redis.Redis(host="127.0.0.1", port=self.port, **settings)

    def answers(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as conn:
                conn.sendall(b"PING\r\n")
                return conn.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    @staticmethod
    def wait_until(condition, what, timeout=10.0, state=None):
        """A bounded poll until *condition()*; past *timeout* seconds an
        AssertionError says what it waited for, and *state()* if given."""
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                seen = "" if state is None else f"; {state()}"
                raise AssertionError(f"waited {timeout} s for {what}{seen}")
            time.sleep(0.01)

    def pause(self):
        self.process.send_signal(signal.SIGSTOP)

    def resume(self):
        self.process.send_signal(signal.SIGCONT)

    def kill(self):
        self.process.kill()
        self.process.wait(10)

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.kill()
            self.process.wait(10)


@pytest.fixture(scope="session")
def redis_server():
    """One redis-server for the session's tests; each test uses its own keys."""
    server = RedisServer(require_binary())
    yield server
    server.stop()


@pytest.fixture
def own_redis_server():
    """A redis-server for one test, which may pause or kill it."""
    server = RedisServer(require_binary())
    yield server
    server.stop()
