"""The options of a retry policy, defined once: their names and types
(:class:`RetryOptions`, what type checkers see in every driver's signature),
their defaults and their checks (:class:`Policy`).

Adding an option is one field of :class:`RetryOptions` with its docstring,
one default and one check in :class:`Policy`, and its use in the loop
(``_core.Call``); every driver - ``retrying``, ``aretrying``, ``@retry``,
``RetryTransport`` - takes it from there.  ``tests/test_options.py`` checks
that the three agree.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict, Union

from . import _checks, instrument
from ._filters import ExceptionFilter, Filter, exception_filter, is_transient, nothing_retried
from .hints import RETRY_AFTER_MAX
from .parts import (
    BreakerPart,
    BudgetPart,
    Part,
    RateLimiterPart,
    ThrottlePart,
    check_part,
    kept_plans,
    stages,
    timeout_part,
    user_parts,
    wrap,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ._attempt import Attempt
    from ._sliding import Clock
    from ._streams import StreamState
    from .breakers import Breaker
    from .budgets import Budget
    from .limiters import CubicRateLimiter, RateLimiter
    from .parts import Drops
    from .throttles import Throttle

__all__ = [
    "CallPlan",
    "DecoratorOptions",
    "HedgeOptions",
    "Policy",
    "RetryOptions",
    "default_delays",
]

#: What a policy takes as delays: a zero-argument function returning fresh
#: delays for each call (the reusable form), a list or tuple (reusable too),
#: or any one-shot iterable.
Delays = Union[Callable[[], Iterable[float]], Sequence[float], Iterable[float]]
#: What serves many calls (``@retry``'s delays): a one-shot iterable would serve
#: one only, and is refused.
ReusableDelays = Union[Callable[[], Iterable[float]], Sequence[float]]
#: ``before_sleep(attempt, outcome, delay)``: *outcome* is the exception, or
#: the result that ``on_result`` asked to retry.
BeforeSleep = Callable[["Attempt", Any, float], object]
#: ``give_up(attempt, outcome)``: the driver stops retrying *outcome*.
GiveUp = Callable[["Attempt", Any], object]


def default_delays() -> Iterator[float]:
    """The delays of a policy given none: 9 retries (10 attempts) of smooth
    jitter from 0.1 s, capped at 5 s, stopping before 45 s of sleep in all.

    Smooth jitter (Polly's default) spreads clients apart like decorrelated
    jitter while the retry times stay near the exponential's (0.1, 0.2,
    0.4 s ... after the first try; each delay about half the exponential's):
    far fewer near-zero sleeps than full jitter gives, no long tail.  Ten
    attempts within 45 s is stamina's budget.

    >>> delays = list(default_delays())
    >>> len(delays) <= 9 and sum(delays) <= 45.0 and max(delays) <= 5.0
    True
    """
    from itertools import islice

    from .adaptors import within
    from .strategies import smooth_jitter

    return within(islice(smooth_jitter(0.1, cap=5.0), 9), 45.0)


class HedgeOptions(TypedDict, total=False):
    """The options hedging shares with the retry drivers (:func:`~backoff_iter.hedged`)."""

    on: ExceptionFilter
    """What to retry: an exception class, a tuple of them, or a predicate
    ``callable(exc) -> bool``, asked of an ``Exception`` only.  Default :func:`~backoff_iter.is_transient`:
    connection errors, timeouts and HTTP transport errors, never a
    programming error; ``on=Exception`` retries every ``Exception``.
    ``KeyboardInterrupt``, ``SystemExit`` and cancellation are never retried."""
    on_result: Callable[[Any], object] | None
    """``predicate(result) -> bool``: a result it accepts is retried like a
    failure (in the loop forms hand it over with ``attempt.set_result``);
    when nothing is left to try, the last result is returned."""
    retry_after: Callable[[Any], float | None] | None
    """``hook(outcome) -> seconds or None``: the server's hint for the
    exception or retried result; the next sleep is at least that long."""
    retry_after_max: float
    """The longest server hint honoured, in seconds (default 6 hours); a
    longer one is clamped to it.  ``inf`` honours any hint, and one too long
    to sleep then means no next attempt."""
    retry_after_beyond: float | None
    """How far beyond the schedule's own delay a server's hint may raise the
    sleep, in seconds (the AWS SDKs': 5); None: as far as *retry_after_max*
    allows."""
    budget: Budget | None
    """A :class:`~backoff_iter.Budget` shared by many calls
    (:class:`~backoff_iter.TokenBucket`, :class:`~backoff_iter.RetryBudget`,
    :class:`~backoff_iter.RetryQuota`, or your own): when it refuses a
    retry, the call gives up."""
    name: str
    """What the events and logs call this policy's calls: ``@retry``'s
    default is the function's qualified name, the loops' ``"call"``."""
    observe: instrument.Observe
    """A hook, or a list of hooks, told a :class:`~backoff_iter.instrument.RetryEvent`
    after each attempt (see :mod:`backoff_iter.instrument`)."""


class RetryOptions(HedgeOptions, total=False):
    """The keyword options of every retry driver: ``retrying``, ``aretrying``,
    ``@retry`` and ``RetryTransport`` take exactly these."""

    deadline: float | None
    """Seconds from the start of the first attempt (per *clock*): no attempt
    starts past it, and no sleep that would end past it; the last sleep is
    shortened to end on it - unless each attempt has a timeout
    (*attempt_timeout*, cut to the deadline too), which would leave the
    attempt after it no time: the call then ends where the sleep would begin.
    A rate limiter's wait before an attempt (the first included) that would
    end past it - or on it, with attempt timeouts - ends the call with
    :class:`~backoff_iter.parts.NoTimeLeft`."""
    clock: Clock
    """The clock of *deadline* and of the events' ``elapsed`` (default
    ``time.monotonic``).  It returns seconds as any real number (an int, a
    ``Decimal``, a ``Fraction``: read as its float); a reading that is not
    finite, or goes back, counts as no time passed."""
    sleep: Callable[[float], Any] | None
    """How to sleep between attempts: ``time.sleep`` in sync loops, the
    running event loop's sleep (asyncio's or trio's) in async ones; an async
    function is awaited.  Tests pass ``sleep=`` or use
    :func:`~backoff_iter.testing.no_sleep`."""
    before_sleep: BeforeSleep | None
    """``hook(attempt, outcome, delay)``, run before each sleep (awaited if async)."""
    give_up: GiveUp | None
    """``hook(attempt, outcome)``, run when the call stops retrying a failure."""
    attempt_timeout: float | Delays | None
    """Seconds each attempt may take, or an iterable of them (the last one
    repeats; none at all, ``inf``, from an empty one), shortened to the
    deadline: ``attempt.timeout``; the async loops cancel the attempt at it
    and retry its ``TimeoutError``.  A sync ``@retry`` passes it on as the
    keyword *timeout_arg* names, which it needs (nothing could interrupt the
    function); hand an ``inf`` to a socket as None, which it takes for no limit."""
    rate_limiter: RateLimiter | None
    """A :class:`~backoff_iter.RateLimiter` every attempt waits for."""
    throttle: Throttle | None
    """A :class:`~backoff_iter.Throttle` that may refuse attempts
    (:class:`~backoff_iter.ThrottledError`)."""
    breaker: Breaker | None
    """A :class:`~backoff_iter.Breaker` that may refuse attempts
    (:class:`~backoff_iter.BrokenCircuitError`)."""
    throttled: Callable[[Any], object] | None
    """``predicate(outcome) -> bool``: which retried failures are the server
    pushing back (for the rate limiter, throttle and parts); without it,
    every retried failure is.  A :class:`~backoff_iter.RetryQuota` charges
    its *throttle_cost* only for the failures this predicate names."""
    parts: Part | Iterable[Part] | None
    """Your own :class:`~backoff_iter.parts.Part`, or an iterable of them,
    consulted around each attempt after the budget, breaker, throttle and
    rate limiter."""


class DecoratorOptions(RetryOptions, total=False):
    """``@retry``'s options: :class:`RetryOptions`, the delays by name, how to
    hand each attempt its timeout, and how to resume a stream."""

    delays: ReusableDelays | None
    """The delays, given by name: ``@retry(delays=my_schedule)`` - the way to
    pass a schedule written as a generator function, which given first and
    alone is the function decorated."""
    timeout_arg: str | None
    """The keyword argument of the decorated function that receives each
    attempt's timeout (``attempt_timeout`` shortened to the deadline)."""
    resume: Callable[[StreamState], Any] | None
    """For a generator function: ``resume(state)`` returns the items that
    follow what the consumer received (:class:`~backoff_iter.StreamState`),
    an async iterable for an async generator; a stream failing after items
    were delivered then goes on from there instead of failing."""


# -- defaults and checks ----------------------------------------------------------------------


# How a frozen policy sets an attribute once it is made (its own dict, which
# its __init__ fills, holds them all: see Policy).
_store = object.__setattr__

#: setter(own, name, value): the checked *value* of the option *name* put in
#: *own*, the dict of the policy being made.
Setter = Callable[[dict[str, Any], str, Any], None]


def _set(check: Callable[[str, Any], Any]) -> Setter:
    """A setter that stores the checked value under the option's own name."""

    def store(own: dict[str, Any], name: str, value: Any) -> None:
        own[name] = check(name, value)

    return store


def _on(own: dict[str, Any], name: str, value: Any) -> None:
    own["on"], own["only_exceptions"] = exception_filter(name, value)


def _optional_seconds(name: str, value: object) -> float | None:
    return None if value is None else _checks.seconds(name, value, infinite=True)


def _callback(*arguments: str, awaited: bool = False) -> Setter:
    """A setter of a function called with *arguments* (their names), or None;
    an async function only if what it returns is *awaited* (in async loops)."""
    count = len(arguments)

    def store(own: dict[str, Any], name: str, value: Any) -> None:
        # (asked here, the error made only for a function refused: a call less
        # for every policy made, as a fresh loop makes one at each call)
        if value is not None and not (callable(value) and _checks.takes(value, count, awaited)):
            _checks.optional_callback(name, value, arguments, awaited)
        own[name] = value

    return store


def _clock(own: dict[str, Any], name: str, value: Any) -> None:
    own[name] = _checks.callback(name, value, ())
    own["steady_clock"] = value is _MONOTONIC


def _attempt_timeout(own: dict[str, Any], name: str, value: Any) -> None:
    own[name] = value
    if value is not None:
        part, one_shot = timeout_part(name, value)
        own["timeout_part"] = part
        if one_shot:
            own["one_shot"] = True


def _part(name: str, value: object) -> object:
    if value is not None:
        check_part(name, value)  # checked now; made into a part by _derive
    return value


#: How each option is checked and stored: setter(own, name, value).
SETTERS: dict[str, Setter] = {
    "on": _on,
    "on_result": _callback("result"),
    "retry_after": _callback("outcome"),
    "retry_after_max": _set(lambda name, value: _checks.seconds(name, value, infinite=True)),
    "retry_after_beyond": _set(_optional_seconds),
    "budget": _set(_part),
    "name": _set(_checks.text),
    "observe": _set(lambda name, value: instrument.hooks(value, name)),
    "deadline": _set(_optional_seconds),
    "clock": _clock,
    "sleep": _callback("seconds", awaited=True),
    "before_sleep": _callback("attempt", "outcome", "delay", awaited=True),
    "give_up": _callback("attempt", "outcome"),
    "attempt_timeout": _attempt_timeout,
    "rate_limiter": _set(_part),
    "throttle": _set(_part),
    "breaker": _set(_part),
    "throttled": _callback("outcome"),
    "parts": _set(user_parts),
}
#: A sync loop's: it never awaits what its sleep or before_sleep returns, so
#: an async one is refused as the policy is made, not at the first retry.
SYNC_SETTERS: dict[str, Setter] = {
    **SETTERS,
    "sleep": _callback("seconds"),
    "before_sleep": _callback("attempt", "outcome", "delay"),
}


def reusable(options: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of *options* for more than one policy (a decorator's, one per
    function it decorates; a transport's two): ``observe=`` or ``parts=``
    given as an iterator (a generator) made a list, which the first policy
    would use up.

    >>> reusable({"observe": (hook for hook in [print]), "name": "f"})
    {'observe': [<built-in function print>], 'name': 'f'}
    """
    made = dict(options)
    for name in ("observe", "parts"):
        value = made.get(name)
        if isinstance(value, Iterator) and not callable(value):  # (a hook may iterate)
            made[name] = list(value)
    return made


#: on=(), which retries no failure (the empty tuple is one object: read by identity).
_NO_CLASSES: tuple[()] = ()

#: The parts wrapping the options budget=, breaker=, throttle= and rate_limiter=.
_SETTING_NO_TIMEOUT = frozenset({BudgetPart, BreakerPart, ThrottlePart, RateLimiterPart})

#: time.monotonic as the library found it: the one clock whose readings need
#: no guard (one patched in later, by a test's fake time, is guarded).
_MONOTONIC = time.monotonic

#: The options a call reads as they are, which change nothing _derive works
#: out: a policy given only these (``retrying(f, on=OSError, sleep=...)``, made
#: for each loop) keeps the bare plan.  Any other option derives.
_READ_AS_GIVEN = frozenset({"on", "sleep", "name", "clock", "retry_after_max"})


class CallPlan:
    """What a policy's options mean for a call: the parts' stages, in their
    order, as the bound methods the core calls, and the flags that let a
    call skip what nobody asked for.  Worked out once per policy
    (``Policy._derive``), never changed after.  ``CallPlan()`` is the bare
    plan: no part, no hook, nothing to tell."""

    __slots__ = (
        "befores",
        "abefores",
        "afters",
        "allows",
        "guarded",
        "checks",
        "limiter",
        "fast",
        "quiet",
        "tells",
        "simple",
        "observed",
        "scoped",
        "timed",
        "before_drops",
        "abefore_drops",
        "allow_drops",
        "shares",
        "successes",
    )

    befores: tuple[Callable[[Any], float], ...]  # parts asked before each attempt
    abefores: tuple[tuple[Callable[[Any], Any], bool], ...]  # ... in async loops (awaited?)
    afters: tuple[Callable[[Any, str, int, float], None], ...]  # ... after each one
    allows: tuple[Callable[[Any, str], float], ...]  # ... before each retry
    guarded: bool  # something to do before each attempt
    checks: tuple[tuple[Breaker | Throttle, Drops], ...]  # ... on a bare first try: check()
    limiter: CubicRateLimiter | None  # ... but a rate limiter, skipped while it is off
    fast: bool  # the first try may run bare: checks guard it
    quiet: bool  # ... and a success is told to nobody
    tells: bool  # a failure is told to parts, or sorted by `throttled`
    simple: bool  # a retry is just the next delay: no hint, deadline or gate
    observed: bool  # a hook is handed the Attempts (before_sleep, give_up)
    scoped: bool  # a part may set an attempt's timeout: async attempts need their scope
    timed: bool  # someone reads the call's start time
    before_drops: Drops  # what befores give back ...
    abefore_drops: Drops  # ... abefores ...
    allow_drops: Drops  # ... and allows (see Stages)
    shares: tuple[int | None, ...] | None  # each after's part's index in allows (see Stages)
    successes: (
        tuple[tuple[Callable[[bool], object], bool], ...] | None
    )  # afters' calls on a success

    def __init__(self) -> None:
        """The bare plan; ``Policy._derive`` makes each policy's."""
        self.befores = self.abefores = self.afters = self.allows = self.checks = ()
        self.before_drops = self.abefore_drops = self.allow_drops = ()
        self.limiter = self.shares = None
        self.successes = ()
        self.guarded = self.tells = self.observed = self.scoped = self.timed = False
        self.fast = self.quiet = self.simple = True

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"CallPlan({fields})"


#: The plan of a policy whose options derive nothing (see _READ_AS_GIVEN).
_BARE = CallPlan()


_BOUNDED = (
    "bound the delays instead: n retries are n delays, as in lambda: islice(exponential(0.1), n)"
)
_DEADLINE = "deadline= bounds the whole call in seconds, attempt_timeout= each attempt"

# The options of the other retry libraries (stamina, tenacity, backoff,
# google-api-core, urllib3) that a newcomer types first, with what does their
# work here: a look-alike of ours would mislead (attempts= is no
# attempt_timeout=).
_PEERS = {
    "attempts": _BOUNDED,
    "tries": _BOUNDED,
    "max_tries": _BOUNDED,
    "max_attempts": _BOUNDED,
    "retries": _BOUNDED,
    "max_retries": _BOUNDED,
    "stop": _BOUNDED + ", or deadline=",
    "stop_after_attempt": _BOUNDED,
    "timeout": _DEADLINE,
    "max_time": _DEADLINE,
    "stop_after_delay": _DEADLINE,
    "wait": "the delays are the first argument, as in lambda: islice(exponential(0.1), 5)",
    "retry": "on= says what is retried: an exception class, a tuple of them, or a predicate",
    "predicate": "on= says what is retried: an exception class, a tuple of them, or a predicate",
}


def _unexpected(maker: str, name: str) -> str:
    """The error of an option *name* that no driver takes, given to *maker*
    (a driver, or ``Policy`` for ``@retry`` and the HTTP adapters), with
    what does its work here if another library's, else the option most like
    it, if one is."""
    import difflib  # only for this error

    if name in _PEERS:
        meant = f" ({_PEERS[name]})"
    else:
        close = difflib.get_close_matches(name, [*SETTERS, "delays"], n=1)
        meant = f" (did you mean {close[0]!r}?)" if close else ""
    given = "" if maker == "Policy" else f"{maker}() got "
    return f"{given}an unexpected keyword argument {name!r}{meant}; RetryOptions lists the options"


class Policy:
    """The checked options of a retry policy, shared by all its calls; frozen.

    The defaults are the class's; each policy copies them into a dict of its
    own as it is made, then sets what it was given there (a class default
    read through an instance is slow on Python 3.11, about 60 ns, and each
    call reads some ten; its own attribute is read at once, and a dict
    filled at once costs less than setting attributes one by one).
    """

    # -- the defaults, one per option of RetryOptions ------------------------------------------
    on: Filter = staticmethod(is_transient)
    only_exceptions: bool = False  # `on` is classes, each a subclass of Exception
    on_result: Callable[[Any], object] | None = None
    retry_after: Callable[[Any], float | None] | None = None
    retry_after_max: float = RETRY_AFTER_MAX
    retry_after_beyond: float | None = None
    budget: Budget | None = None
    name: str = "call"
    observe: tuple[instrument.Hook, ...] = ()
    deadline: float | None = None
    clock: Callable[[], float] = _MONOTONIC  # a builtin: no method binding
    steady_clock: bool = True  # the clock is time.monotonic: no reading of it needs a guard
    sleep: Callable[[float], Any] | None = None
    before_sleep: BeforeSleep | None = None
    give_up: GiveUp | None = None
    attempt_timeout: float | Delays | None = None
    rate_limiter: RateLimiter | None = None
    throttle: Throttle | None = None
    breaker: Breaker | None = None
    throttled: Callable[[Any], object] | None = None
    parts: tuple[Part, ...] = ()

    # -- the delays ----------------------------------------------------------------------------
    factory: Callable[[], Iterable[float]] = staticmethod(default_delays)
    """Fresh delays for a call."""
    one_shot: bool = False  # made from a one-shot iterable: one loop only
    used: bool = False  # ... which a loop has used
    timeout_part: Part | None = None  # attempt_timeout, as a part

    # -- what the options mean for a call ---------------------------------------------------------
    plan: CallPlan = _BARE  # worked out by _derive(); the bare plan for a policy of defaults
    warned: bool = False  # the endless-schedule warning was given

    #: How the options are checked and stored (a sync loop's refuse an async sleep).
    setters = SETTERS

    def __init__(self, delays: Delays | None = None, **options: Unpack[RetryOptions]) -> None:
        own = self.__dict__
        own.update(_DEFAULTS)
        if delays is not None:
            if isinstance(delays, list):  # the common case, at once
                _checks.listed("delays", delays)
                own["factory"] = delays.__iter__
            else:
                own["factory"], one_shot = _checks.delays_factory("delays", delays)
                if one_shot:
                    own["one_shot"] = True
        if not options:
            return  # every option at its default, and so what it means (the bare plan)
        derives = False  # an option whose meaning _derive works out
        setters = type(self).setters
        for name, value in options.items():
            setter = setters.get(name)
            if setter is None:
                raise _checks.ArgumentTypeError(name, _unexpected(type(self).__name__, name))
            setter(own, name, value)
            if name not in _READ_AS_GIVEN:
                derives = True
        if own["on"] is _NO_CLASSES and own["on_result"] is None:
            raise nothing_retried()
        if derives:
            self._derive(options)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(
            f"a retry policy is frozen: make a new one with {name}= instead of setting it"
        )

    def _derive(self, given: Iterable[str]) -> None:
        """What the options mean for a call: the policy's :class:`CallPlan`,
        the one an earlier policy given the same parts and flags worked out
        where it is kept (``_kept``: a fresh ``retrying()`` loop makes a
        policy at each call), else worked out now.  *given*: the names of the
        options given."""
        plans, key = _kept(self, given)
        plan = None if plans is None else plans.get(key)
        if plan is None:
            plan = self._work_out()
            if plans is not None:
                plans[key] = plan
        _store(self, "plan", plan)

    def _work_out(self) -> CallPlan:
        """What the options mean for a call, in one place."""
        every_failure = self.throttled is None
        parts: list[Part] = []
        if self.budget is not None:
            parts.append(wrap("budget", self.budget))
        if self.breaker is not None:
            parts.append(wrap("breaker", self.breaker))
        if self.throttle is not None:
            parts.append(wrap("throttle", self.throttle, every_failure))
        if self.rate_limiter is not None:
            parts.append(wrap("rate_limiter", self.rate_limiter, every_failure))
        parts.extend(self.parts)
        if self.timeout_part is not None:
            parts.append(self.timeout_part)
        (
            befores,
            abefores,
            afters,
            allows,
            checks,
            limiter,
            drops,
            adrops,
            allow_drops,
            shares,
            successes,
        ) = stages(parts)
        # The first try may run bare when what guards it is a check of no
        # argument (a breaker's, a throttle's) and a CUBIC rate limiter that is
        # off; its result, judged there, goes to the loop only when on_result
        # rejects it, and a success is told to the hooks there.
        fast = checks is not None
        observed = self.before_sleep is not None or self.give_up is not None
        # (made empty, then each field named: keyword arguments cost twice as much)
        plan = CallPlan.__new__(CallPlan)
        plan.befores, plan.abefores, plan.afters, plan.allows = befores, abefores, afters, allows
        plan.before_drops, plan.abefore_drops, plan.allow_drops = drops, adrops, allow_drops
        plan.shares, plan.successes = shares, successes
        plan.guarded = bool(abefores)
        plan.checks = checks or ()
        plan.limiter = limiter
        plan.fast = fast
        plan.quiet = fast and not afters and self.on_result is None and not self.observe
        plan.tells = bool(afters) or self.throttled is not None
        plan.simple = self.retry_after is None and self.deadline is None and not allows
        plan.observed = observed
        # attempt_timeout's part, and any Part of the user's (given to any option),
        # may set an attempt's timeout; the library's wrappers of the options never do.
        plan.scoped = False
        for part in parts:  # (a loop: issuperset() of an iterator makes a set of it first)
            if type(part) not in _SETTING_NO_TIMEOUT:
                plan.scoped = True
                break
        plan.timed = self.deadline is not None or observed
        return plan

    def claim(self) -> None:
        """Refuse a second loop over a policy made from a one-shot iterator."""
        if self.used:
            raise RuntimeError(
                "this retry policy was made from a one-shot iterator of delays,"
                " which its first loop used up; pass a function returning fresh"
                " delays (lambda: islice(exponential(0.1), 5)) or a list to"
                " reuse the policy"
            )
        _store(self, "used", True)

    def mark_warned(self) -> None:
        """The endless-schedule warning was given: never again for this policy."""
        _store(self, "warned", True)


class SyncPolicy(Policy):
    """The policy of a sync loop (``retrying``, the urllib3 and botocore
    adapters): it never awaits what its sleep or before_sleep returns, so an
    async one is refused as it is made, not at the first retry."""

    setters = SYNC_SETTERS


#: What each policy's dict starts from: every default of the class.
_DEFAULTS: dict[str, Any] = {name: getattr(Policy, name) for name in Policy.__annotations__}

#: The options wrapped as parts by the library (see parts.wrap).
_PART_OPTIONS = frozenset({"budget", "breaker", "throttle", "rate_limiter"})
#: The options whose parts are a policy's own (see _kept).
_OWN_PARTS = frozenset({"parts", "attempt_timeout"})
#: The plans of the policies given no part, by their flags (see _kept).
_PLANS_OF_NO_PART: dict[tuple[object, ...], CallPlan] = {}
#: The most plans kept of policies given no part (each order of the options
#: given has its own).
_MOST_KEPT = 64


def _kept(
    policy: Policy, given: Iterable[str]
) -> tuple[dict[tuple[object, ...], CallPlan] | None, tuple[object, ...]]:
    """Where *policy*'s plan is kept for the policies made after it, and its
    key there: what the plan depends on, read from the options *given* (the
    others are at their defaults) - each part with what its class binds ahead
    (see :func:`~backoff_iter.parts.kept_plans`), of any other option whether
    it is set.  A policy given no part finds it in this module, one given only
    the library's own parts on the first of them.  None (each policy works out
    its own) for a policy given a part of its own: the user's (``parts=``, a
    subclass, any other object) or its ``attempt_timeout``'s."""
    own = policy.__dict__
    key: tuple[object, ...] = ()
    plans = None
    for name in given:
        if name in _READ_AS_GIVEN:
            continue
        value = own[name]
        if name in _PART_OPTIONS:
            if value is not None:
                kept = kept_plans(value, plans is None)  # (kept on the first part only)
                if kept is None:
                    return None, ()
                if plans is None:
                    plans = kept[0]
                key = (*key, name, value, kept[1])
        elif name in _OWN_PARTS:
            # (what they were made into: a timeout of 0, or an empty iterable
            # of them, is a timeout part too)
            if own["timeout_part"] is not None or own["parts"]:
                return None, ()
        else:
            key = (*key, name, not value if name == "observe" else value is None)
    if plans is None:
        plans = _PLANS_OF_NO_PART
        if len(plans) >= _MOST_KEPT:
            plans.clear()
    return plans, key
