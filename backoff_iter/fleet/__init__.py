"""Parts shared by a fleet of processes, through Redis.

A :class:`~backoff_iter.TokenBucket`, :class:`~backoff_iter.RetryBudget`,
:class:`~backoff_iter.RetryQuota`, :class:`~backoff_iter.CircuitBreaker` or
:class:`~backoff_iter.AdaptiveThrottle` given ``store=`` a
:class:`RedisStore` counts for every process that gives the same Redis and
name: one store, and one name, per part, every process with the same
parameters.  The guide, with the budgets' guarantees in numbers, is
"Budgets for a fleet of processes" in ``docs/budgets.rst``.

What the fleet shares
    A budget's room (one bucket, one window and reserve, one quota), lent to
    the processes as leases held in Redis so that no room is spent twice; a
    throttle's requests and accepts over its window; a breaker's failure
    ratio over the sampling duration, its state (closed, open until a time,
    half open) and its probe: the script opens the circuit for every
    process, and after the break hands the one half-open probe to the first
    process that asks.  A probe whose outcome never comes (its caller was
    cancelled) lapses a break duration after it went, and the next goes,
    from whichever process asks first - the one whose probe lapsed too.

No decision waits on the network
    Each process counts locally; the store's daemon thread exchanges its
    counts every ``sync_interval`` seconds in one Lua script that applies
    them atomically, once, whatever answers are lost (Redis keeps what it
    last applied of each process until the process leaves, the keys expire,
    or a bounded time, *kept* below, after the fleet forgot it), and reads
    Redis's own clock for the fleet's windows and breaks.

What the lag costs
    A process hears of the others' counts at its next exchange: a budget
    spends at most its lease per interval (see the guide); a throttle's
    probability and a breaker's ratio lag by up to an interval; a breaker
    opens in every process within two exchanges of the failure that crossed
    the ratio, and a process that has not heard yet lets calls go meanwhile.

Redis slow, paused, restarted or gone
    An answer holds for ``max(3 x sync_interval, 0.25)`` seconds (*stale*)
    after the exchange that brought it.  Once exchanges have failed (or one
    has hung: Redis paused, packets dropped) that long, each part goes on
    alone, on time whatever the connection's timeout, warning once on the ``backoff_iter.fleet``
    logger: a budget with its last lease and its own counts (at most a
    ``1/n`` slice of a whole one), a breaker and a throttle as the
    in-process part on their own window (a breaker alone opens, and sends
    its probe, by its own counts; a part that never heard is the
    in-process one from the start).  When Redis answers again, what was
    counted meanwhile is merged (a ``RetryBudget``'s and the windows' counts
    older than the window leave as they would).  A Redis restarted empty
    (or keys deleted) is rebuilt from what the processes last heard (a
    process silent since rebuilds too, within the keys' lifetime after its
    last exchange, when they cannot have expired): a budget's level never
    refills from full, a window keeps what its processes owed.  A
    throttle's and a breaker's windows start again from the counts sent
    since, and a breaker's state is lost with its keys: the fleet's circuit
    is closed until its failures cross the ratio again.

Keys expire
    A process with no calls for ``max(60 x sync_interval, 4 x stale)``
    seconds (*silence*) stops exchanging, and the fleet forgets it (takes
    its lease back) ``4 x stale`` seconds (the *horizon*) after its last
    exchange; a breaker keeps exchanging while the fleet's circuit is open
    or half open as it last heard, and while it asks for the probe.  What
    the fleet last applied of a process it forgot stays for 50 horizons
    (*kept*: a minute at the default ``sync_interval``), or three windows
    if longer: a process cut off alone for that long (a partition, a
    paused VM, a failover) whose last answer was lost is not counted twice;
    one back later is new to the fleet, and the counts whose answers it
    lost are applied again.  So Redis holds a few fields per process live
    or forgotten within *kept*, however many crashed before.  A part's
    keys outlive the last exchange by *silence*, or three windows if longer;
    an open or half-open breaker's, by its break (or its probe's lapse) plus
    the horizon, however long the break, so that a process starting
    meanwhile finds it open and the fleet still sends one probe.  With a
    store, a window (``sampling_duration``) is at most 1e9 seconds.

Ending
    ``store.close()`` (or ``with RedisStore(...) as store:``) sends the
    process's last counts, leaves the fleet (its lease comes back at once)
    and stops the thread; a part still used after goes on alone, as when
    Redis is gone (one that never heard is the in-process part).  A store
    and part dropped without ``close()`` stop the thread when collected,
    but the counts of the last interval are lost and the fleet forgets the
    process only after its horizon.
"""

from __future__ import annotations

from ._redis import RedisStore
from ._shared import _SharedState as _SharedState  # for simulations and tests
from ._store import Store

__all__ = ["RedisStore", "Store"]
