"""See retries in production: the event every driver reports, and hooks that count it.

Every driver tells its hooks one :class:`RetryEvent` per attempt: a
``"retry"`` (the attempt failed and the driver is about to sleep), a
``"give_up"`` (it failed and nothing is left to try: the delays ran out,
the deadline or the budget said no), or the end of the call: ``"success"``,
or ``"error"`` (an exception the policy does not retry) - or, for a
stream its consumer closed after items, ``"closed"``.  So a call that
fails three times and then succeeds reports three retries and one success:
four attempts.  Hedged calls (:func:`~backoff_iter.hedged`) also report a
``"hedge"`` for each further attempt they send and a ``"cancelled"`` for
each attempt they cancel.

Give hooks to one policy with ``observe=`` (one hook or a list), or to
every driver of the process with :func:`enable`:

>>> from backoff_iter import retry
>>> seen = []
>>> @retry([0.5, 1.0], name="fetch", observe=seen.append, sleep=lambda s: None)
... def fetch(replies=iter([ConnectionError("reset"), "ok"])):
...     reply = next(replies)
...     if isinstance(reply, Exception):
...         raise reply
...     return reply
>>> fetch()
'ok'
>>> [(e.kind, e.name, e.number, e.delay) for e in seen]
[('retry', 'fetch', 1, 0.5), ('success', 'fetch', 2, None)]

A hook is a plain function of the event, called in the retried call's
thread or task; keep it fast and let it not raise (its error would end the
call).  With no hook at all, the drivers make no event: the success path
costs nothing more.  A hook may say which kinds of events it wants with an
``events`` attribute (a set of kinds): enabled for the process, one that
lists none of ``"success"``, ``"error"`` and ``"closed"`` hears only retries and
give-ups (and the error that ends a call after a retry, if its ``wants``
says so), and costs a call that succeeds at once nothing.  It is a promise
of what the hook ignores, not a filter: a hook still reads
``event.kind``, and one given to ``observe=`` hears every kind.
A hook may also have a ``wants(kind)`` method, asked before a retry or
give-up event is made (for retries once, at a call's first): when every
hook of the call says no (the default logger does while its logger drops
the level), no event is made at all.

**Retries are logged by default.**  Every driver starts with one hook
enabled for the whole process: :func:`~backoff_iter.log_retries`'s
logger, which logs each retry and each give-up at ``WARNING`` on the
``backoff_iter`` logger (the call's name, the attempt, the delay, the
error's type and message), as stamina does, and the error that ends a call
after a retry ("not retried": a breaker's refusal, say).  Silence it with ordinary
logging, ``logging.getLogger("backoff_iter").setLevel(logging.ERROR)``, or
turn every process-wide hook off with :func:`disable`.  Inside
:func:`backoff_iter.testing.no_sleep` it stays quiet.

Two more hooks are ready-made: :func:`prometheus` counts attempts, retries,
give-ups and sleeps into prometheus-client, and :func:`opentelemetry`
records the same as OpenTelemetry metrics, with a span per call.  Their
libraries are imported only when these are called: ``pip install
prometheus-client`` or ``opentelemetry-api``, or the extras ``prometheus``
and ``otel`` (``pip install '.[prometheus,otel]'`` in a checkout).
"""

from __future__ import annotations

import _thread
import itertools
from collections.abc import Callable, Iterable
from operator import is_
from types import FunctionType
from typing import TYPE_CHECKING, Any, NamedTuple, Union

from backoff_iter import _checks

if TYPE_CHECKING:
    from ._opentelemetry import opentelemetry
    from ._prometheus import prometheus

__all__ = [
    "SLEEP_BUCKETS",
    "Hook",
    "Observe",
    "RetryEvent",
    "disable",
    "enable",
    "enabled",
    "log_retries",
    "opentelemetry",
    "prometheus",
    "reset",
]


class RetryEvent(NamedTuple):
    """What a driver tells its hooks after each attempt; a frozen record."""

    kind: str
    """``"retry"``, ``"give_up"``, ``"success"`` or ``"error"`` (and, for
    hedged calls, ``"hedge"`` and ``"cancelled"``; for a stream its consumer
    closed after items - or ended by throwing in what the source let out, with
    ``resume=`` - ``"closed"``: the attempt ran, no failure, nothing retried)."""
    name: str
    """The policy's ``name``: for ``@retry`` the function's qualified name, else ``"call"``."""
    number: int
    """The attempt's number, from 1."""
    outcome: Any
    """The attempt's exception, or its result (retried or not)."""
    delay: float | None
    """For a retry, the sleep about to begin (None for a hedged call's
    attempt that failed when no hedge was left to send: nothing is retried,
    the call waits for an attempt still running); for a hedge, the seconds
    since the attempt before it started; None otherwise."""
    slept: float
    """Seconds the call has slept so far, before this delay."""
    elapsed: float
    """Seconds from the start of the call's first attempt, per the policy's
    clock - but from the end of ``@retry``'s first attempt when it ran bare
    (nothing asked before it but a breaker's or a throttle's check) and only
    hooks that want no success are listening: a call that succeeds at once
    reads no clock.  The loops always count from the start."""
    reason: str | None
    """For a give-up, why: ``"exhausted"`` (the delays ran out),
    ``"deadline"``, ``"budget"`` (a part refused the retry),
    ``"retry_after"`` (the server's hint was longer than can be slept) or
    ``"committed"`` (a stream failed after delivering items).  For an
    error, None when the attempt ran and ended with it; when the attempt
    never ran (it is no attempt to count), ``"refused"`` (a part - a
    breaker, a throttle, a limiter - refused it, or its wait there broke)
    or ``"interrupted"`` (the sleep before it was: a cancellation,
    ``KeyboardInterrupt``, a sleep that raised).  None otherwise."""
    call_id: int
    """The same for every event of one call, and different between calls of the process."""


#: A hook: a function of one :class:`RetryEvent`.
Hook = Callable[[RetryEvent], object]
#: What ``observe=`` takes: a hook, an iterable of hooks, or None.
Observe = Union[Hook, Iterable[Hook], None]

_tuple_new = tuple.__new__

#: A new call id for the events of one call (drivers count up from 1;
#: ``Urllib3Retry``'s requests count down from -1).
new_call_id: Callable[[], int] = itertools.count(1).__next__


def event(
    kind: str,
    name: str,
    number: int,
    outcome: Any,
    delay: float | None,
    slept: float,
    elapsed: float,
    reason: str | None,
    call_id: int,
) -> RetryEvent:
    """A :class:`RetryEvent`, made as the tuple it is (a NamedTuple's own
    ``__new__`` is Python code, twice as slow): every driver makes its events here."""
    return _tuple_new(
        RetryEvent, (kind, name, number, outcome, delay, slept, elapsed, reason, call_id)
    )


def hooks(observe: Observe, name: str = "observe") -> tuple[Hook, ...]:
    """``observe=`` as a tuple of hooks, each checked to be callable with the
    event - and not one of the functions that make a hook, given uncalled
    (``observe=log_retries`` would call it with the first event, and fail
    every call from there)."""
    checked = _checks.several(name, observe, callable, "a hook, a list of hooks or None")
    for hook in checked:
        for factory in _FACTORIES:
            if hook is globals().get(factory):  # (a backend is here once it was imported)
                made = factory if factory == "log_retries" else f"instrument.{factory}"
                raise _checks.ArgumentTypeError(
                    name,
                    f"{name} must be hooks, got the function {made}, which makes one:"
                    f" {made}() was probably meant",
                )
        method = getattr(hook, "__call__", None)  # noqa: B004 - the method itself is asked
        if isinstance(hook, type) and isinstance(method, FunctionType):
            raise _checks.ArgumentTypeError(  # (its call makes an instance, not a hook's work)
                name,
                f"{name} must be hooks, got the class {hook.__qualname__}, whose instances are"
                f" hooks: {hook.__qualname__}(...) was probably meant",
            )
        _checks.callback(name, hook, ("event",))
    return checked


#: The functions that make a hook: given uncalled where a hook goes, a mistake.
_FACTORIES = ("log_retries", "prometheus", "opentelemetry")


def hearing(hooks: tuple[Hook, ...], kind: str) -> tuple[Hook, ...]:
    """Those of *hooks* that hear an event of *kind* now: each without a
    ``wants(kind)`` method, and each whose ``wants(kind)`` says yes (the retry
    logger's is false while its logger drops the level).  The drivers make no
    event that none of them hears, and tell none a hook does not want.  Most
    calls ask of the same hooks (the process's, alone): which of them have
    ``wants`` is kept for those (the same hooks: a call's own hook and the
    process's come in a tuple made per call).

    >>> class GiveUpsOnly:
    ...     def wants(self, kind):
    ...         return kind == "give_up"
    ...     def __call__(self, event):
    ...         pass
    >>> quiet = GiveUpsOnly()
    >>> hearing((print, quiet), "retry") == (print,)
    True
    >>> hearing((print, quiet), "give_up") == (print, quiet)
    True
    """
    global _last_asked
    last, asking = _last_asked
    if hooks is not last and not (len(hooks) == len(last) and all(map(is_, hooks, last))):
        asking = tuple((hook, _wants(hook)) for hook in hooks)
        if all(wants is None for _, wants in asking):
            asking = None
        _last_asked = hooks, asking
    if asking is None:
        return hooks
    return tuple(hook for hook, wants in asking if wants is None or wants(kind))


def _wants(hook: Hook) -> Callable[[str], bool] | None:
    """*hook*'s ``wants(kind)`` method, or None: it hears every event."""
    wants: Callable[[str], bool] | None = getattr(hook, "wants", None)
    return wants if callable(wants) else None


#: hearing()'s last hooks, each with its wants (None: none has one).
_last_asked: tuple[
    tuple[Hook, ...], tuple[tuple[Hook, Callable[[str], bool] | None], ...] | None
] = ((), None)


def wanting(hooks: tuple[Hook, ...], kind: str) -> tuple[Hook, ...]:
    """Those of *hooks* whose ``wants(kind)`` says yes now (a hook without
    ``wants`` is not among them): of the hooks that hear only retries and
    give-ups, those told of an error that ends a call after a retry."""
    asking = ((hook, _wants(hook)) for hook in hooks)
    return tuple(hook for hook, wants in asking if wants is not None and wants(kind))


def _wants_successes(hook: Hook) -> bool:
    """Does *hook* want to hear of every call's end (``"success"``, ``"error"``,
    a stream's ``"closed"``), not only of retries and give-ups?"""
    events = getattr(hook, "events", None)
    return events is None or "success" in events or "error" in events or "closed" in events


#: The process-wide hooks that hear every event ...
every: tuple[Hook, ...] = ()
#: ... and those that hear only retries and give-ups (the default logger; and
#: an error after a retry if they want it): a call that succeeds at once
#: never pays for them.  The drivers read both at each call; only
#: :func:`enable` and :func:`disable` change them.
failures: tuple[Hook, ...] = ()
#: ``every`` as a list, changed in place with it: a decorated function keeps it
#: in its closure and sees at once whether a process-wide hook hears successes.
listening: list[Hook] = []
#: Held while enable() or disable() replaces them: two threads enabling at
#: once must not lose a hook (each reads the tuple, then stores a longer one).
_lock = _thread.allocate_lock()


def enable(*new: Hook) -> None:
    """Give *new* hooks to every driver of the process, beside their own ``observe=``.

    Like stamina's ``set_on_retry_hooks``: one line at start-up instruments
    every retry, including those of libraries you do not control.  Unlike
    it, *new* hooks go beside those enabled - but a
    :class:`~backoff_iter.RetryLogger` of yours (``enable(log_retries(my_logger))``) takes
    the default log's place, as one given to ``observe=`` does: a retry is
    logged once (:func:`reset` brings the default back).  Calls
    already under way keep the hooks they started with.  A hook enabled
    already is not enabled again: start-up code that runs twice (an app
    factory per test) counts nothing twice, nor does a call whose
    ``observe=`` has an enabled hook too.

    >>> from backoff_iter import retrying
    >>> seen = []
    >>> enable(seen.append)
    >>> for attempt in retrying([0.0], sleep=lambda s: None):
    ...     with attempt:
    ...         pass
    >>> reset()  # back to the default: only the logger of retries
    >>> [event.kind for event in seen]
    ['success']
    """
    checked = hooks(list(new), "new")
    with _lock:
        _enable(checked)


#: The :func:`_identity` of each hook enabled, with the ``every`` and
#: ``failures`` it was taken of: a hook is enabled with one look-up, however
#: many are (a disable() or a reset() since, it is taken afresh).
_identities: tuple[tuple[Hook, ...], tuple[Hook, ...], set[object]] = ((), (), set())


def _enable(new: tuple[Hook, ...]) -> None:
    """:func:`enable` of *new*, checked (the lock held)."""
    global every, failures, _identities
    known_every, known_failures, known = _identities
    if known_every is not every or known_failures is not failures:
        known = {_identity(hook) for hook in (*every, *failures)}
    # A hook enabled already is not enabled again (start-up code run twice).
    added: list[Hook] = []
    for hook in new:
        identity = _identity(hook)
        if identity not in known:
            known.add(identity)
            added.append(hook)
    logs_own = any(isinstance(hook, RetryLogger) for hook in added)
    if logs_own:  # yours logs: not the default
        every = tuple(hook for hook in every if hook is not _default_logger)
        failures = tuple(hook for hook in failures if hook is not _default_logger)
    every += tuple(hook for hook in added if _wants_successes(hook))
    failures += tuple(hook for hook in added if not _wants_successes(hook))
    listening[:] = every
    if logs_own:  # the default logger may have left: taken afresh (once a logger is enabled)
        known = {_identity(hook) for hook in (*every, *failures)}
    _identities = (every, failures, known)


def _identity(hook: Hook) -> object:
    """What makes a hook one hook: its object, or for a method, the method's
    object and name (``seen.append``, read twice, is two objects); hooks
    that merely compare equal are two."""
    owner = getattr(hook, "__self__", None)
    if owner is None:
        return id(hook)
    return id(owner), getattr(hook, "__name__", None)


def _same(hook: Hook, other: Hook) -> bool:
    """One hook (see :func:`_identity`)."""
    return hook is other or _identity(hook) == _identity(other)


#: beside()'s answers, by id of the observe= tuple: (observe, every, failures,
#: the two without observe's hooks), kept while those are still the ones.
_beside: dict[int, tuple[tuple[Hook, ...], ...]] = {}


def beside(
    observe: tuple[Hook, ...], every: tuple[Hook, ...], failures: tuple[Hook, ...]
) -> tuple[tuple[Hook, ...], tuple[Hook, ...]]:
    """The process-wide hooks *every* and *failures* that a call whose own
    hooks are *observe* adds beside them: those not among them (by
    :func:`_same`), so that a hook both enabled and given to ``observe=``
    hears each event once; and not the default logger when *observe* has
    a :class:`RetryLogger` of its own (``observe=log_retries(...)``): a
    retry is logged once, as the call says.  Worked out once for each
    policy's hooks while :func:`enable` and :func:`disable` change nothing."""
    known = _beside.get(id(observe))
    if known is not None and known[0] is observe and known[1] is every and known[2] is failures:
        return known[3], known[4]
    # A logger of the call's own logs its retries: the default one stands aside.
    logs_own = any(isinstance(own, RetryLogger) for own in observe)

    def apart_from_own(hook: Hook) -> bool:
        return not (
            any(_same(hook, own) for own in observe) or (logs_own and hook is _default_logger)
        )

    apart = tuple(filter(apart_from_own, every))
    failing = tuple(filter(apart_from_own, failures))
    if len(_beside) >= 256:  # policies made per call: their tuples come and go
        _beside.clear()
    _beside[id(observe)] = (observe, every, failures, apart, failing)
    return apart, failing


def disable() -> None:
    """Remove every process-wide hook: those :func:`enable` gave, and the
    default one that logs retries (``enable(log_retries())`` brings it back)."""
    global every, failures
    with _lock:
        every = failures = ()
        listening.clear()


def reset() -> None:
    """Back to the start: only the default hook, which logs retries (quiet
    under :func:`~backoff_iter.testing.no_sleep`, and standing aside for a
    policy whose ``observe=`` has a :class:`~backoff_iter.RetryLogger` of its own).
    One step for the other threads: a reset beside another, or beside an
    :func:`enable`, leaves what one after the other would."""
    global _default_logger, every, failures
    logger = RetryLogger(give_up_level=logs.WARNING, quiet_in_tests=True)
    with _lock:
        every = failures = ()
        _default_logger = logger
        _enable((logger,))


def enabled() -> tuple[Hook, ...]:
    """The process-wide hooks: those that hear every event, then those that
    hear only retries and give-ups (the default logger), each in the order
    they were enabled."""
    return every + failures


#: The sleep histograms' bucket bounds, in seconds: 1-2.5-5 per decade from
#: 10 ms to 10 s, then 30 s, 1, 2 and 5 minutes.  The default schedule's
#: 0.1-5 s, the usual caps (AWS SDKs' 20 s, Google clients' 60 s, gRPC's
#: reconnect 120 s) and a server's ``Retry-After`` of minutes each fall in a
#: bucket of their own; longer waits land in +Inf, and one bucket holds all
#: below 10 ms (full jitter's near-zero draws).  Prometheus' default buckets
#: stop at 10 s; OpenTelemetry's default ones are meant for milliseconds.
SLEEP_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


def __getattr__(name: str) -> object:
    """The backends, imported on first use: ``import backoff_iter`` loads neither."""
    from importlib import import_module

    if name not in ("prometheus", "opentelemetry"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value: object = getattr(import_module(f"._{name}", __name__), name)
    globals()[name] = value
    return value


from . import logs  # noqa: E402 - the default hook, below
from .logs import RetryLogger, log_retries  # noqa: E402
from .logs import error_type as error_type  # noqa: E402 - for the backends

_default_logger: Hook | None = None  # the hook reset() enables
reset()  # retries are visible by default
