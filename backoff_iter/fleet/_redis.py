"""The Redis store: a thread per store that exchanges its part's counts
with Redis (or a Redis Cluster) every sync interval."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any

from backoff_iter import _checks
from backoff_iter._extras import missing

from ._budget_script import BUDGET
from ._count_script import BREAKER, THROTTLE
from ._ledger import REBUILT, REPAIRED
from ._member import Member, Timing
from ._store import Store

if TYPE_CHECKING:
    import redis

__all__ = ["RedisStore"]

_log = logging.getLogger("backoff_iter.fleet")


def _redis() -> Any:
    """The redis module, or an error that says how to install it."""
    try:
        import redis
    except ImportError as error:
        missing("RedisStore", "redis", "redis", error)
    return redis


def _cluster_class(module: Any) -> type | None:
    cluster = getattr(module, "cluster", None)
    return getattr(cluster, "RedisCluster", None)


class RedisStore(Store):
    """One Redis, one *name*: where a part keeps what a fleet shares.

    *client* is a redis-py ``redis.Redis``, or a ``redis.cluster.RedisCluster``
    (a part's keys share one hash slot, ``{name}``, so its script runs on
    any node of a cluster; *name* may not begin with ``}``).  The store's thread talks to the same server
    through a connection of its own, made from the client's settings with a
    socket timeout of ``max(0.5, 5 x sync_interval)`` seconds and no retries
    of its own (a cluster client keeps two, to follow a failover; a client
    whose pool it cannot copy, such as a Sentinel one, is used as it is:
    decisions never wait on it anyway).  *sync_interval* (0.001 to 60
    seconds) is how often a busy process exchanges its counts.  A store
    serves one part (a budget, a breaker or a throttle); ``close()`` it, or
    use it as a context manager, to stop its thread and leave the fleet
    (the thread is a daemon, and also stops when the store and its part are
    garbage collected; a second one, idle but while an exchange is under
    way, sees the part's answer lapse on time should that exchange hang).
    Thread-safe.

    See :mod:`backoff_iter.fleet` for what the fleet shares and what the
    lag between exchanges can cost.
    """

    __slots__ = ("client", "name", "sync_interval", "_worker", "_closed", "_finalizer")

    client: redis.Redis
    """The redis-py client, as given."""
    name: str
    """The fleet's name for the part."""
    sync_interval: float
    """Seconds between a busy process's exchanges."""

    def __init__(self, client: redis.Redis, name: str, *, sync_interval: float = 0.1) -> None:
        module = _redis()
        kinds = tuple(k for k in (module.Redis, _cluster_class(module)) if k is not None)
        if not isinstance(client, kinds):
            raise _checks.ArgumentTypeError(
                "client",
                "client must be a redis.Redis or a redis.cluster.RedisCluster"
                f" (redis-py's sync clients), got {_checks.shown(client)}",
            )
        if not isinstance(name, str):
            raise _checks.ArgumentTypeError(
                "name", f"name must be a string, got {_checks.shown(name)}"
            )
        if not name:
            raise _checks.ArgumentValueError("name", "name must not be empty")
        if name.startswith("}"):  # {name}: an empty hash tag, each key its own slot
            raise _checks.ArgumentValueError(
                "name",
                f"name must not begin with '}}': the keys' hash tag {{name}} would be empty"
                f" and a Redis Cluster would spread them over several slots, got {name!r}",
            )
        sync_interval = _checks.number("sync_interval", sync_interval)
        if not 0.001 <= sync_interval <= 60.0:
            raise _checks.ArgumentValueError(
                "sync_interval",
                f"sync_interval must be in [0.001, 60] seconds, got {_checks.shown(sync_interval)}",
            )
        self.client = client
        self.name = name
        self.sync_interval = sync_interval
        self._worker: _Worker | None = None
        self._closed = False
        self._finalizer: weakref.finalize[Any, Any] | None = None

    def _attach(self, member: Member, window: float) -> None:
        if self._closed:
            raise _checks.ArgumentValueError("store", f"store is closed: {self!r}")
        if self._worker is not None and self._worker.serving():
            raise _checks.ArgumentValueError(
                "store",
                f"store {self!r} already serves a part; make one RedisStore (and name) per part",
            )
        timing = Timing(self.sync_interval, window)
        member._timing = timing
        member._stale = timing.stale
        member._active_at = time.monotonic()  # exchanging from the start, idle or not
        member._member = _new_member()
        keys = [
            f"backoff_iter:{{{self.name}}}:{member.KIND}:{part}"
            for part in ("counts", "members", "ledger", "demand", "gone")
        ]
        client, own = _own_client(self.client, max(0.5, 5.0 * self.sync_interval))
        worker = _Worker(member, client, own, keys, self.name)
        member._signal = worker.signal
        self._worker = worker
        self._finalizer = weakref.finalize(self, worker.stop, False)
        worker.start()

    def close(self) -> None:
        """Send this process's last counts, leave the fleet and stop the thread."""
        self._closed = True
        if self._finalizer is not None:
            self._finalizer.detach()
        if self._worker is not None:
            self._worker.stop(True)

    def __enter__(self) -> RedisStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"RedisStore(<{_where(self.client)}>, {self.name!r},"
            f" sync_interval={self.sync_interval!r})"
        )


def _where(client: Any) -> str:
    """Where *client* talks to, for a repr."""
    pool = getattr(client, "connection_pool", None)
    if pool is None:  # a cluster client: no default node once closed
        node = client.get_default_node()
        if node is None:
            return "redis.cluster.RedisCluster"
        return f"redis.cluster.RedisCluster {node.host}:{node.port}"
    settings = pool.connection_kwargs
    host = settings.get("host") or "localhost"  # (redis-py's default, when not given)
    where = settings.get("path") or f"{host}:{settings.get('port', 6379)}"
    return f"redis.Redis {where}/{settings.get('db', 0)}"


def _new_member() -> str:
    return f"{os.getpid()}-{os.urandom(6).hex()}"


def _timeouts(settings: dict[str, Any], timeout: float) -> dict[str, Any]:
    """*settings* with socket timeouts of at most *timeout*, and redis-py 7+'s pool internals dropped."""
    settings = {
        key: value
        for key, value in settings.items()
        if not key.startswith(("maint_notifications", "orig_"))
    }
    for key in ("socket_timeout", "socket_connect_timeout"):
        current = settings.get(key)
        settings[key] = timeout if current is None else min(current, timeout)
    return settings


# What a cluster client's own copy keeps of its settings: who it is and how it
# talks, not the internals of redis-py's connections (a handler, a pool class).
_CLUSTER_KEPT = frozenset(
    (
        "username",
        "password",
        "credential_provider",
        "client_name",
        "protocol",
        "socket_timeout",
        "socket_connect_timeout",
        "socket_keepalive",
        "socket_keepalive_options",
        "encoding",
        "encoding_errors",
        "ssl",
        "ssl_keyfile",
        "ssl_certfile",
        "ssl_cert_reqs",
        "ssl_ca_certs",
        "ssl_ca_data",
        "ssl_check_hostname",
        "ssl_password",
    )
)


def _own_client(client: Any, timeout: float) -> tuple[Any, bool]:
    """A client on its own connections, with *timeout* and (almost) no
    retries; the client itself when it cannot be copied.  True when new."""
    module = _redis()
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    pool = getattr(client, "connection_pool", None)
    if pool is None:  # a RedisCluster: its nodes, and its settings
        try:
            from redis.cluster import ClusterNode

            given = client.nodes_manager.connection_kwargs
            settings = _timeouts({k: v for k, v in given.items() if k in _CLUSTER_KEPT}, timeout)
            node: Any = ClusterNode  # (redis-py leaves it untyped)
            nodes = [node(each.host, each.port) for each in client.get_nodes()]
            cluster: Any = _cluster_class(module)
            return cluster(startup_nodes=nodes, retry=Retry(NoBackoff(), 2), **settings), True
        except Exception:  # pragma: no cover - a redis-py whose cluster client is built otherwise
            return client, False
    if type(pool) not in (module.ConnectionPool, module.BlockingConnectionPool):
        return client, False
    try:
        settings = _timeouts(pool.connection_kwargs, timeout)
        settings["retry"] = Retry(NoBackoff(), 0)
        own = module.ConnectionPool(connection_class=pool.connection_class, **settings)
        return module.Redis(connection_pool=own), True
    except Exception:  # pragma: no cover - a redis-py that builds pools otherwise
        return client, False


#: The largest count a script's numbers (Lua's doubles) hold exactly.
_EXACT = 2**53


def _argument(parameter: object) -> str:
    """A part's parameter as its script's argument: an integer beyond what the
    script's numbers hold (a ``minimum_throughput`` of 10**5000, which no count
    reaches) as the largest they hold, not 5,000 digits (str() refuses 4,300)."""
    if isinstance(parameter, int) and abs(parameter) > _EXACT:
        return str(_EXACT if parameter > 0 else -_EXACT)
    return str(parameter)


#: The scripts by the name fleet classes give (``Member.SCRIPT``).
SCRIPTS = {"budget": BUDGET, "throttle": THROTTLE, "breaker": BREAKER}

_workers: weakref.WeakSet[_Worker] = weakref.WeakSet()


class _Worker:
    """A store's thread: every sync interval, one exchange for its part; and
    its watcher, for the exchange that hangs.  Holds its part weakly: the
    threads end when the part is collected."""

    def __init__(self, member: Member, client: Any, own: bool, keys: list[str], name: str) -> None:
        self._member = weakref.ref(member)
        self._client = client
        self._own = own
        self._keys = keys
        self._timing = member._timing
        self._parameters = [_argument(p) for p in member._parameters]
        self._name = name
        self._script = client.register_script(SCRIPTS[member.SCRIPT])  # loaded at its first use
        self.signal = threading.Event()
        self._stopping = False
        self._leave = False
        self._failing = False
        self._repairing = False
        self.error: Exception | None = None
        self._thread: threading.Thread | None = None
        self._watcher: threading.Thread | None = None
        self._watch = threading.Condition()  # guards _sent_at; wakes the watcher
        self._sent_at: float | None = None  # when the exchange under way was sent
        self._ended = False  # the thread is done (the part gone, or stopped)
        _workers.add(self)

    def serving(self) -> bool:
        return self._member() is not None and not self._stopping

    def start(self) -> None:
        self._ended = False
        self._thread = threading.Thread(
            target=self._run, name=f"backoff_iter.fleet {self._name}", daemon=True
        )
        self._watcher = threading.Thread(
            target=self._watch_exchanges, name=f"backoff_iter.fleet {self._name} watch", daemon=True
        )
        self._thread.start()
        self._watcher.start()

    def stop(self, leave: bool) -> None:
        """Stop the thread; with *leave*, after a last exchange that leaves the fleet."""
        self._leave = leave
        self._stopping = True
        self.signal.set()
        self._wake_watcher()
        thread = self._thread
        if leave and thread is not None and thread is not threading.current_thread():
            thread.join(self._timing.stale + 1.0)
        if self._own:
            with contextlib.suppress(Exception):  # closing a broken connection
                pool = getattr(self._client, "connection_pool", None)
                if pool is not None:
                    pool.disconnect()
                else:  # a cluster client's nodes
                    self._client.close()

    def _run(self) -> None:
        try:
            self._serve()
        finally:  # (the part gone, or the store stopped): the watcher ends too
            self._ended = True
            self._wake_watcher()

    def _serve(self) -> None:
        while not self._stopping:
            try:
                if not self._exchange(False):
                    return  # the part is gone
            except Exception:  # a bug of ours: say so, and go on
                _log.exception("fleet part %r: an exchange failed", self._name)
            self.signal.wait(self._timing.interval)
            self.signal.clear()
        try:
            if self._leave and not self._failing:
                self._exchange(True)
        finally:
            member = self._member()
            if member is not None:  # no answer comes again: it goes on alone
                member._end()

    def _wake_watcher(self) -> None:
        with self._watch:
            self._watch.notify_all()

    def _watch_exchanges(self) -> None:
        """The watcher's thread: while an exchange hangs (Redis paused, packets
        dropped, a client the store could not copy and with no timeout), the
        part's last answer still lapses on time - ``stale`` seconds after it -
        and the part goes on alone then, not when the call gives up (its socket
        timeout, ``5 x sync_interval``, or never); the store's thread, blocked
        in that call, cannot see to it."""
        watch = self._watch
        with watch:
            while not (self._stopping or self._ended):
                sent_at = self._sent_at
                if sent_at is None:  # no exchange under way
                    watch.wait()
                    continue
                member = self._member()
                if member is None:
                    return
                lapses_at = member._lapses_at()
                now = time.monotonic()
                if now < lapses_at:
                    del member  # not kept alive while waiting
                    watch.wait(lapses_at - now)  # (woken early when the exchange ends)
                    continue
                member._lapse(now)  # alone now, unless the answer came meanwhile
                alone = member._alone
                del member
                if alone and not self._failing:  # said once, as for a failed exchange
                    self._failing = True
                    _log.warning(
                        "fleet part %r: Redis did not answer within %.3g s (the exchange"
                        " still hangs); deciding from this process's own counts until it does",
                        self._name,
                        now - sent_at,
                    )
                while self._sent_at == sent_at and not (self._stopping or self._ended):
                    watch.wait()  # this exchange is seen to; the next one may hang too

    def _exchange(self, leave: bool) -> bool:
        """One exchange; False when the part is gone."""
        member = self._member()
        if member is None:
            return False
        sent_at = time.monotonic()
        member._lapse(sent_at)
        sent = member._snapshot(sent_at, leave)
        name = member._member
        del member  # not kept alive while Redis takes its time
        if sent is None:
            return True  # idle
        arguments = [name, "", *self._timing.arguments, int(leave), *sent, *self._parameters]
        with self._watch:
            self._sent_at = sent_at
            self._watch.notify_all()
        try:
            reply = self._script(keys=self._keys, args=arguments, client=self._client)
            answer = [int(number) for number in reply]
        except Exception as error:  # Redis away, slow or odd: never the part's callers' problem
            self.error = error  # the latest, for whoever looks
            if not self._failing:
                self._failing = True
                _log.warning(
                    "fleet part %r: Redis did not answer (%s: %s); deciding from"
                    " this process's own counts until it does",
                    self._name,
                    type(error).__name__,
                    error,
                )
            member = self._member()
            if member is not None:
                member._lapse(time.monotonic())
            return True
        finally:
            with self._watch:
                self._sent_at = None
                self._watch.notify_all()
        self._report(answer[0])
        member = self._member()
        if member is not None:
            member._merge(sent, answer, sent_at)
        if self._failing:
            self._failing = False
            _log.info("fleet part %r: Redis answers again; counts merged", self._name)
        return True

    def _report(self, mask: int) -> None:
        """One warning when the script found what it had to repair or rebuild."""
        if not mask & (REPAIRED | REBUILT):
            self._repairing = False
            return
        if not self._repairing:
            self._repairing = True
            what = []
            if mask & REPAIRED:
                what.append(
                    "dropped values no exchange could have written (or a key of another type)"
                )
            if mask & REBUILT:
                what.append(
                    "found its counts gone (expired or deleted) and rebuilt them from this process's view"
                )
            _log.warning("fleet part %r: Redis %s", self._name, " and ".join(what))

    def _after_fork(self) -> None:
        """In a forked child: a new member with nothing counted, a new thread."""
        member = self._member()
        if member is None or self._stopping:
            return
        member._renew(_new_member())
        self.signal = member._signal = threading.Event()
        self._watch = threading.Condition()  # (the parent's watcher may have held its lock)
        self._sent_at = None
        self._failing = False
        self.start()


def _after_fork_in_child() -> None:
    for worker in list(_workers):
        worker._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
