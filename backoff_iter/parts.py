"""Parts: what a retry policy consults around each attempt, through one interface.

A budget, a circuit breaker, a throttle, a rate limiter and the per-attempt
timeout are each a :class:`Part`.  The driver core knows no part by name:
it asks every part of the policy, in a fixed order, at three moments (and
a fourth, should an attempt the parts let go never run):

1. **before each attempt** (the first included): ``before_attempt(call)``
   may refuse the attempt by raising (a breaker's ``BrokenCircuitError``;
   the error ends the call, the attempt never runs), make it wait (a rate
   limiter; ``abefore_attempt`` in async loops), or set its timeout;
2. **after each attempt** the dependency answered (not one a cancellation
   or Ctrl-C cut short): ``after_attempt(outcome, kind, number, spent)``
   hears how it went;
3. **before each retry**, once the delays and the deadline leave room:
   ``allow_retry(outcome, kind)`` may refuse it (a budget), and what it
   returns is what the retry took;
4. **when an attempt they let go will not run** after all (a part after
   them refused it, or the deadline came first): ``attempt_dropped(taken)``
   gives back what each held for it - a budget the retry it paid for, a
   breaker its half-open probe, a rate limiter its token.

The order: the budget, the breaker, the throttle, the rate limiter, your
own ``parts=``, then the attempt timeout - before an attempt in that order,
after it in the reverse one (as middleware unwinds), so a refusal comes
before any wait and the budget hears last.

Write your own by subclassing :class:`Part` and overriding what you need;
give it to any driver with ``parts=[...]``:

>>> from backoff_iter import retry
>>> from backoff_iter.parts import Part
>>> class Tally(Part):
...     '''Counts the outcomes of every attempt it sees.'''
...     def __init__(self):
...         self.kinds = []
...     def after_attempt(self, outcome, kind, number, spent):
...         self.kinds.append(kind)
>>> tally = Tally()
>>> @retry([0.0, 0.0], on=ConnectionError, parts=[tally], sleep=lambda s: None)
... def fetch(replies=iter([ConnectionError(), "ok"])):
...     reply = next(replies)
...     if isinstance(reply, Exception):
...         raise reply
...     return reply
>>> fetch(), tally.kinds
('ok', ['failure', 'success'])
"""

from __future__ import annotations

import functools
import itertools
import operator
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple, Optional, cast

from . import _checks, _sleeping
from .breakers import CircuitBreaker
from .budgets import RetryBudget, RetryQuota, TokenBucket
from .throttles import AdaptiveThrottle

if TYPE_CHECKING:
    from typing_extensions import TypeGuard

    from ._core import Call
    from .breakers import Breaker
    from .budgets import Budget
    from .limiters import CubicRateLimiter, RateLimiter
    from .throttles import Throttle

    #: The ``attempt_dropped`` of parts in a row (None where one gives nothing back).
    Drops = tuple[Optional[Callable[[float], None]], ...]

__all__ = ["ERROR", "FAILURE", "SUCCESS", "THROTTLE", "NoTimeLeft", "Part"]

#: An attempt's outcome, as parts hear it: a success (a result not retried) ...
SUCCESS = "success"
#: ... an exception the policy does not retry (it ends the call), or a
#: stream the consumer closed after its items (the outcome None): the
#: dependency answered, nothing counts against it (an attempt interrupted by
#: a ``BaseException`` that is no ``Exception`` - a cancellation,
#: ``KeyboardInterrupt`` - had no answer, and no part hears of it) ...
ERROR = "error"
#: ... a failure the policy retries (an exception ``on`` matches, or a
#: result ``on_result`` accepts) ...
FAILURE = "failure"
#: ... or such a failure that the policy's ``throttled`` predicate says was
#: the server pushing back.
THROTTLE = "throttle"


class Part:
    """A piece of a retry policy that the core consults around each attempt.

    Subclass it and override what you need; each method's default does
    nothing.  A part is shared by every call of its policy (and often by
    many policies), from any thread or task: keep it thread-safe, and keep
    what one call needs on that call (``before_attempt`` gets it).
    """

    __slots__ = ()

    def before_attempt(self, call: Call) -> float:
        """Before each attempt of *call*: raise to refuse it, or return.

        What it returns is the seconds it made the attempt wait (``0.0``
        when it did not); a simulator that does not really sleep reads it.
        *call* tells ``call.number`` (the attempt about to run, from 1),
        ``call.last`` (the failure retried before it, or None),
        ``call.policy`` and ``call.elapsed()``; set ``call.timeout`` to
        bound the attempt.
        """
        return 0.0

    async def abefore_attempt(self, call: Call) -> float:
        """:meth:`before_attempt` in async loops: wait here without blocking."""
        return self.before_attempt(call)

    def after_attempt(self, outcome: Any, kind: str, number: int, spent: float) -> None:
        """After each attempt that ran and was answered (not one interrupted
        by a cancellation or ``KeyboardInterrupt``): its *outcome* (the
        exception or the result; None for a stream the consumer closed after
        items), *kind*
        (:data:`~backoff_iter.parts.SUCCESS`, :data:`~backoff_iter.parts.ERROR`,
        :data:`~backoff_iter.parts.FAILURE` or :data:`~backoff_iter.parts.THROTTLE`),
        its *number* (from 1) and what this part's own :meth:`allow_retry`
        took for the call's last retry, *spent* (``0.0`` before any retry,
        and for a part that takes nothing): a part pays back only what it
        took, never what another part took.  (A hedged call's winner hears
        what its own hedge took and the hedges it made unneeded; its
        failures hear ``0.0``.)

        If it raises, the parts after it hear of the attempt all the same (a
        breaker's half-open probe comes back, a budget is paid), and then its
        error ends the call (the first, should more of them raise; but an
        interruption - Ctrl-C, a cancellation - before an ordinary error)."""

    def allow_retry(self, outcome: Any, kind: str) -> float:
        """May the call retry *outcome* (of *kind*) now?  Asked last, once the
        delays and the deadline leave room: a falsy answer refuses, a truthy
        one is what the retry took (``True`` counts as 1)."""
        return True

    def attempt_dropped(self, taken: float) -> None:
        """The attempt this part let go will not run after all: a part asked
        after it refused it (a breaker, a throttle, a rate limiter's wait
        past the deadline) or raised, or the deadline came first.  Give back what the
        part held for it: *taken* is what its :meth:`allow_retry` took for
        it, ``0.0`` for what its :meth:`before_attempt` let go (a part that
        did both hears of each).  Asked newest first, never for an attempt
        that ran; the library's budget option gives a budget with
        ``give_back`` (``RetryQuota``) the retry back, its
        breaker option lets the next call be the half-open probe, its rate
        limiter option gives a ``CubicRateLimiter`` the token back.

        >>> from backoff_iter import retry
        >>> class Seats(Part):  # a seat held for each attempt it lets go, until it ends
        ...     def __init__(self):
        ...         self.held = 0
        ...     def before_attempt(self, call):
        ...         self.held += 1
        ...         return 0.0
        ...     def after_attempt(self, outcome, kind, number, spent):
        ...         self.held -= 1
        ...     def attempt_dropped(self, taken):
        ...         self.held -= 1  # the attempt never ran: its seat is free
        >>> class Closed(Part):
        ...     def before_attempt(self, call):
        ...         raise PermissionError("closed")
        >>> seats = Seats()
        >>> @retry([0.0], parts=[seats, Closed()], sleep=lambda s: None)
        ... def fetch():
        ...     return "ok"
        >>> fetch()
        Traceback (most recent call last):
        PermissionError: closed
        >>> seats.held
        0
        """


class Stages(NamedTuple):
    """What a call asks of its parts, in the documented order: the methods
    each part overrides (``before_attempt`` first to last, ``after_attempt``
    last to first)."""

    befores: tuple[Callable[[Any], float], ...]
    abefores: tuple[tuple[Callable[[Any], Any], bool], ...]  # (method, awaited)
    afters: tuple[Callable[[Any, str, int, float], None], ...]
    allows: tuple[Callable[[Any, str], float], ...]
    #: The befores as the breakers and throttles whose ``check()`` they ask,
    #: which a first attempt may ask before any call is made, each with the
    #: ``attempt_dropped`` of the befores before it (what to give back when
    #: it refuses); None when a part reads the call (its timeout, its sleep)
    #: or is awaited ...
    checks: tuple[tuple[Breaker | Throttle, Drops], ...] | None
    #: ... but for a CubicRateLimiter, which a first attempt may skip while it
    #: is off (it would let the attempt go at once, taking nothing).
    limiter: CubicRateLimiter | None
    #: The ``attempt_dropped`` of each part in ``befores``, ``abefores`` and
    #: ``allows`` (None where it gives nothing back); empty when none does.
    before_drops: Drops
    abefore_drops: Drops
    allow_drops: Drops
    #: For each of ``afters``, the index in ``allows`` of its part's
    #: ``allow_retry`` (None for a part that takes nothing): a part hears what
    #: it took itself.  None when no part both takes and hears.
    shares: tuple[int | None, ...] | None
    #: For a first try's success, each of ``afters`` as the one call it makes
    #: then, ``(method, argument)``: a breaker's or a throttle's
    #: ``record(True)``, a rate limiter's ``record(False)``.  None when a part
    #: hears more of a success (a budget, a part of the user's, a subclass's
    #: own ``record`` that takes the outcome).
    successes: tuple[tuple[Callable[[bool], object], bool], ...] | None


#: The stages of no part at all.
_NO_STAGES = tuple.__new__(Stages, ((), (), (), (), (), None, (), (), (), None, ()))


def stages(parts: list[Part]) -> Stages:
    """The :class:`Stages` of *parts*, in their order."""
    if not parts:
        return _NO_STAGES
    befores: list[Callable[[Any], float]] = []
    abefores: list[tuple[Callable[[Any], Any], bool]] = []
    afters: list[Callable[[Any, str, int, float], None]] = []
    allows: list[Callable[[Any, str], float]] = []
    checks: list[tuple[Breaker | Throttle, int]] | None = []  # (check, befores before it)
    limiter = None
    giving = False  # a part gives back what it let go (see _drops)
    shares: list[int | None] = []  # for each of afters: its part's index in allows
    shared = False  # a part both takes and hears
    successes: list[tuple[Callable[[bool], object], bool]] | None = []  # (see _success)
    for part in parts:
        before, abefore, after, allow, drop = _overridden(type(part))
        if limiter is None and type(part) is RateLimiterPart and _cubic(part.limiter):
            limiter = part.limiter
        elif before or abefore:
            check = _first_check(part)
            checks = None if check is None or checks is None else [*checks, (check, len(befores))]
        if before:
            befores.append(part.before_attempt)
        if abefore:
            abefores.append((part.abefore_attempt, True))
        elif before:
            abefores.append((part.before_attempt, False))
        if after:
            told = part.after_attempt
            if told.__class__ is not _BOUND and _among(afters, told):  # (a staticmethod's)
                told = functools.partial(told)  # one object in each place, for position()
            afters.append(told)
            success = _success(part)
            # (none for a part given twice: position() could not tell its places apart;
            # asked from the second on: a fresh retrying() loop given a part of the
            # user's makes its stages at each call)
            if success is None or successes is None or (successes and _given(successes, success)):
                successes = None
            else:
                successes = [*successes, success]
            if allow:
                shares.append(len(allows))
                shared = True
            else:
                shares.append(None)
        if allow:
            allows.append(part.allow_retry)
        giving = giving or (drop and _gives_back(part))
    afters.reverse()
    shares.reverse()
    if successes is not None:
        successes.reverse()
    drops = _drops(parts) if giving else ((), (), ())
    guards: tuple[tuple[Breaker | Throttle, Drops], ...] | None = None
    if checks is not None:  # each with what the befores before it give back
        guards = tuple([(check, drops[0][:n]) for check, n in checks]) if checks else ()
    fields = (
        tuple(befores),
        tuple(abefores),
        tuple(afters),
        tuple(allows),
        guards,
        limiter,
        *drops,
        tuple(shares) if shared else None,
        None if successes is None else tuple(successes),
    )
    return tuple.__new__(Stages, fields)  # (a NamedTuple's own __new__ is Python: slow)


def tell_rest(
    afters: tuple[Callable[[Any, str, int, float], None], ...],
    at: int,
    outcome: Any,
    kind: str,
    number: int,
    spents: tuple[float, ...] | None = None,
) -> None:
    """``afters[at]`` raised: the parts after it still hear of attempt
    *number* (each its share of *spents*, ``0.0`` when None), each even if
    one of them raises - a breaker's probe comes back, a budget is paid,
    whatever a part before them does.  Their errors are dropped: the caller
    re-raises the first (``raise``, in the ``except`` that called this) -
    but an interruption (a ``BaseException`` that is no ``Exception``:
    Ctrl-C, a cancellation) after an ordinary first error is raised here,
    once all have heard, the first error its context: it is never lost."""
    first = sys.exc_info()[1]  # the caller's, which it raises after this
    interrupted: BaseException | None = None
    for index in range(at + 1, len(afters)):
        try:
            afters[index](outcome, kind, number, 0.0 if spents is None else spents[index])
        except Exception:  # (dropped: the first error is the one that propagates)
            continue
        except BaseException as error:  # ... unless it is no interruption, and this one is
            if interrupted is None and isinstance(first, Exception):
                interrupted = error
    if interrupted is not None:
        try:
            raise interrupted
        finally:  # (no local keeps the errors, nor their frames: no cycle)
            first = interrupted = None


def tell_each(
    afters: tuple[Callable[[Any, str, int, float], None], ...],
    outcome: Any,
    kind: str,
    number: int,
    spents: tuple[float, ...] | None = None,
) -> None:
    """Each of *afters* hears of attempt *number* (``Part.after_attempt``),
    each what its own ``allow_retry`` took (its place in *spents*; ``0.0``
    each when None), even when one before it raises: that first error
    propagates once all have heard."""
    try:
        if spents is None:
            for after in afters:
                after(outcome, kind, number, 0.0)
        else:
            for after, spent in zip(afters, spents):
                after(outcome, kind, number, spent)
    except BaseException:  # the parts after it hear all the same
        tell_rest(afters, position(afters, after), outcome, kind, number, spents)  # pyright: ignore[reportPossiblyUnboundVariable]
        raise


def succeeded(
    afters: tuple[Callable[[Any, str, int, float], None], ...],
    successes: tuple[tuple[Callable[[bool], object], bool], ...] | None,
    broke: Callable[..., object],
    result: Any,
) -> None:
    """*broke* raised as a first try's success was told (one of *afters*, or
    of the calls in *successes* when they were made): the parts after it
    hear of the success all the same (see :func:`tell_rest`)."""
    told = afters if successes is None else [record for record, _ in successes]
    tell_rest(afters, position(told, broke), result, SUCCESS, 1)


def position(items: Iterable[object], item: object) -> int:
    """Where *item* is in *items*, by identity: a part's bound method is an
    object of its own at each place in ``Stages.afters`` (even for a part
    given twice; ``stages`` wraps an after_attempt that is no bound method
    where it is there already), as its record is in ``Stages.successes``."""
    for index, each in enumerate(items):
        if each is item:
            return index
    raise ValueError(f"{item!r} is not among them")  # pragma: no cover - the caller's own


def _drops(parts: list[Part]) -> tuple[Drops, Drops, Drops]:
    """The ``attempt_dropped`` of each part in the befores, the abefores and the
    allows of *parts* (None where it gives nothing back), each aligned with its list."""
    before_drops: list[Callable[[float], None] | None] = []
    abefore_drops: list[Callable[[float], None] | None] = []
    allow_drops: list[Callable[[float], None] | None] = []
    for part in parts:
        before, abefore, _, allow, drop = _overridden(type(part))
        given = part.attempt_dropped if drop and _gives_back(part) else None
        if before:
            before_drops.append(given)
        if before or abefore:
            abefore_drops.append(given)
        if allow:
            allow_drops.append(given)
    return (
        tuple(before_drops) if any(before_drops) else (),
        tuple(abefore_drops) if any(abefore_drops) else (),
        tuple(allow_drops) if any(allow_drops) else (),
    )


#: What a part's method is once read from the part: a new object at each read.
_BOUND = type(Part().after_attempt)


def _among(afters: list[Callable[[Any, str, int, float], None]], told: object) -> bool:
    """Whether *told* is one of *afters* already: a part's after_attempt that
    is not a method bound to it (a staticmethod's function, a callable class
    attribute) is one object for every instance, and for a part given twice."""
    return any(each is told for each in afters)


def _given(
    successes: list[tuple[Callable[[bool], object], bool]],
    success: tuple[Callable[[bool], object], bool],
) -> bool:
    """Whether *success*'s record is among *successes* already (its part given
    twice): then ``position`` could not tell which of the two raised.  (A
    loop, not any() of a generator, which took four times as long: a fresh
    ``retrying()`` loop given a part of the user's makes its stages, and asks
    this, at each call.)"""
    record = success[0]
    for told, _ in successes:  # noqa: SIM110 (a loop: see above)
        if told is record:
            return True
    return False


def _cubic(limiter: object) -> TypeGuard[CubicRateLimiter]:
    """Whether *limiter* is a CubicRateLimiter itself, not a subclass (whose
    acquire() may wait when it is off): a first try may skip it while it is off."""
    from .limiters import CubicRateLimiter  # loaded already if it is one

    return type(limiter) is CubicRateLimiter


def _gives_back(part: Part) -> bool:
    """Whether *part*, whose class overrides ``attempt_dropped``, gives anything
    back: the library's budget only a budget with ``give_back``, its breaker
    only a ``CircuitBreaker``'s probe, its rate limiter only a
    ``CubicRateLimiter``'s token (the protocols have no way to)."""
    if type(part) is BudgetPart:
        return part.gives_back is not None
    if type(part) is BreakerPart:
        return part.unsent is not None
    if type(part) is RateLimiterPart:
        return part.gives_back is not None
    return True


def _success(part: Part) -> tuple[Callable[[bool], object], bool] | None:
    """What *part*'s ``after_attempt`` does with a first try's success, as one
    call ``(method, argument)``: the library's breaker, throttle and rate
    limiter options record it; None for any other part."""
    if type(part) is BreakerPart or type(part) is ThrottlePart or type(part) is RateLimiterPart:
        return part.succeeded
    return None


def _first_check(part: Part) -> Breaker | Throttle | None:
    """Whose ``check()`` *part* asks before an attempt: a breaker's or a
    throttle's (they never read the call; asked at each call, never bound
    ahead); None for any other part."""
    if type(part) is BreakerPart:
        return part.breaker
    if type(part) is ThrottlePart:
        return part.throttle
    return None


# Which of a Part class's stage methods it overrides, by class (bounded: a
# program may make part classes on the fly).
_OVERRIDDEN: dict[type, tuple[bool, bool, bool, bool, bool]] = {}
_STAGES = ("before_attempt", "abefore_attempt", "after_attempt", "allow_retry", "attempt_dropped")


def _overridden(cls: type) -> tuple[bool, bool, bool, bool, bool]:
    """Which of before_attempt, abefore_attempt, after_attempt, allow_retry
    and attempt_dropped the Part class *cls* overrides (read once per class)."""
    found = _OVERRIDDEN.get(cls)
    if found is None:
        if len(_OVERRIDDEN) >= 256:
            _OVERRIDDEN.clear()
        before, abefore, after, allow, drop = (
            getattr(cls, method) is not getattr(Part, method) for method in _STAGES
        )
        found = _OVERRIDDEN[cls] = before, abefore, after, allow, drop
    return found


# -- the parts of the options: budget=, breaker=, throttle=, rate_limiter= -----------------


class BudgetPart(Part):
    """A :class:`~backoff_iter.Budget` as a part: told of every failure it may
    pay for and every success, asked before each retry."""

    __slots__ = ("budget", "weighs_throttles", "gives_back")

    budget: Budget
    weighs_throttles: bool
    gives_back: Callable[[float], None] | None

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        # The library's quota hears whether the failure is a throttle: its cost.
        self.weighs_throttles = _library_signature(budget, RetryQuota, "try_retry")
        # A budget may take back a retry that never ran (the protocol's optional method).
        give_back = getattr(budget, "give_back", None)
        self.gives_back = (
            cast("Callable[[float], None]", give_back) if callable(give_back) else None
        )

    def after_attempt(self, outcome: Any, kind: str, number: int, spent: float) -> None:
        if kind is SUCCESS:
            self.budget.record_success(number == 1, spent)
        elif kind is not ERROR:
            self.budget.record_failure(number == 1)

    def allow_retry(self, outcome: Any, kind: str) -> float:
        if self.weighs_throttles:
            return self.budget.try_retry(outcome, kind is THROTTLE)  # type: ignore[call-arg]
        return self.budget.try_retry(outcome)

    def attempt_dropped(self, taken: float) -> None:
        """A retry that never ran: the budget takes it back, if it can."""
        if self.gives_back is not None:
            self.gives_back(taken)


class BreakerPart(Part):
    """A :class:`~backoff_iter.Breaker` as a part: it may refuse each attempt,
    and counts each failure the policy retries against the dependency."""

    __slots__ = ("breaker", "record", "unsent", "succeeded")

    breaker: Breaker
    record: Callable[[bool, Any], None]
    unsent: Callable[[], None] | None
    succeeded: tuple[Callable[[bool], object], bool] | None  # a success's call (see Stages)

    def __init__(self, breaker: Breaker) -> None:
        self.breaker = breaker
        # The library's breaker lets another call probe when its probe was never sent.
        self.unsent = breaker._probe_unsent if isinstance(breaker, CircuitBreaker) else None
        # The library's breaker hears the failure too: the cause of its refusals.
        full = _library_signature(breaker, CircuitBreaker, "record")
        self.record = (
            cast("Callable[[bool, Any], None]", breaker.record)
            if full
            else _success_only(breaker.record)
        )
        self.succeeded = _success_call(breaker, CircuitBreaker, full)

    def before_attempt(self, call: Call) -> float:
        self.breaker.check()
        return 0.0

    def after_attempt(self, outcome: Any, kind: str, number: int, spent: float) -> None:
        self.record(kind is SUCCESS or kind is ERROR, outcome)

    def attempt_dropped(self, taken: float) -> None:
        """The call it let go never ran: were it the half-open probe, another may go."""
        if self.unsent is not None:
            self.unsent()


class ThrottlePart(Part):
    """A :class:`~backoff_iter.Throttle` as a part: it may refuse each
    attempt, and hears whether the server accepted it.  Without a
    ``throttled`` predicate every failure retried counts as a throttle."""

    __slots__ = ("throttle", "every_failure", "record", "succeeded")

    throttle: Throttle
    every_failure: bool
    record: Callable[[bool, Any], None]
    succeeded: tuple[Callable[[bool], object], bool] | None  # a success's call (see Stages)

    def __init__(self, throttle: Throttle, every_failure: bool) -> None:
        self.throttle = throttle
        self.every_failure = every_failure
        # The library's throttle hears the failure too: the cause of its refusals.
        full = _library_signature(throttle, AdaptiveThrottle, "record")
        self.record = (
            cast("Callable[[bool, Any], None]", throttle.record)
            if full
            else _success_only(throttle.record)
        )
        self.succeeded = _success_call(throttle, AdaptiveThrottle, full)

    def before_attempt(self, call: Call) -> float:
        self.throttle.check()
        return 0.0

    def after_attempt(self, outcome: Any, kind: str, number: int, spent: float) -> None:
        throttled = kind is THROTTLE or (kind is FAILURE and self.every_failure)
        self.record(not throttled, outcome)


def _library_signature(value: object, kind: type, method: str) -> bool:
    """Whether *value* is one of the library's *kind* whose *method* takes the
    second argument the library's own does (``record(success, failure)``,
    ``try_retry(outcome, throttled)``): a subclass may override it with the
    protocol's shorter signature, and is then called as the protocol says.
    The method read is the one called: a function set on the instance (of a
    subclass: the library's own have no dict) is read too, and its signature."""
    if not isinstance(value, kind):
        return False
    # (not a Python function - a builtin's, a wrapper's: as the library's)
    return _checks.takes(getattr(value, method, None), 2)


def _success_call(
    value: Breaker | Throttle, kind: type[CircuitBreaker | AdaptiveThrottle], full: bool
) -> tuple[Callable[[bool], object], bool] | None:
    """The one call a success makes of a breaker's or a throttle's part:
    ``record(True)``.  A record of the library's signature (*full*) is given
    the result too, which the library's own ignores on a success: it is
    called without it; a subclass's own, or a function set on the instance,
    may read it (None: told through ``after_attempt``)."""
    if full and getattr(value.record, "__func__", None) is not kind.record:
        return None
    return value.record, True


def _success_only(record: Callable[[bool], None]) -> Callable[[bool, Any], None]:
    """A protocol's ``record(success)``, called with the outcome too (which it does not take)."""

    def told(success: bool, outcome: Any) -> None:
        record(success)

    return told


class RateLimiterPart(Part):
    """A :class:`~backoff_iter.RateLimiter` as a part: each attempt waits for
    it, and it hears whether each response was a throttle (every failure
    retried, without a ``throttled`` predicate)."""

    __slots__ = ("limiter", "every_failure", "record", "gives_back", "succeeded")

    limiter: RateLimiter
    every_failure: bool
    record: Callable[[bool], None]
    gives_back: Callable[[], None] | None
    succeeded: tuple[Callable[[bool], object], bool]  # a success's call (see Stages)

    def __init__(self, limiter: RateLimiter, every_failure: bool) -> None:
        self.limiter = limiter
        self.every_failure = every_failure
        self.record = limiter.record
        self.succeeded = limiter.record, False  # (not throttled)
        # The library's limiter takes back the token of an attempt that never ran.
        self.gives_back = limiter._give_back if _cubic(limiter) else None

    def before_attempt(self, call: Call) -> float:
        return self.limiter.acquire(_within_deadline(call, _sleeping.sleep)) or 0.0

    async def abefore_attempt(self, call: Call) -> float:
        return await self.limiter.aacquire(_within_deadline(call, _sleeping.asleep)) or 0.0

    def after_attempt(self, outcome: Any, kind: str, number: int, spent: float) -> None:
        self.record(kind is THROTTLE or (kind is FAILURE and self.every_failure))

    def attempt_dropped(self, taken: float) -> None:
        """A part after it refused the attempt: the token it waited for goes
        back.  (Off, the limiter took none and takes none back; one that
        another thread's throttle turned on in between takes back one it never
        gave, within its capacity.)"""
        if self.gives_back is not None:
            self.gives_back()


class NoTimeLeft(TimeoutError):
    """The rate limiter's wait before an attempt, the first included, would
    end past the deadline (or on it, when attempts have timeouts): the
    attempt never starts, and the call ends with this error, its cause the
    call's last failure (none before the first attempt), as a part's refusal
    ends it (a breaker's).

    No attempt starts past the deadline, and no wait before one ends past it:
    the schedule's delay is shortened to end on it, a rate limiter's wait (a
    token it holds for the attempt) cannot be, and is given back."""


def _within_deadline(call: Call, sleeping: Callable[[Any, float], Any]) -> Any:
    """The sleep a rate limiter waits with before an attempt: the policy's,
    but refusing (:class:`NoTimeLeft`) a wait that would end past the
    deadline - before the first attempt too, which would otherwise start past
    it - or on it when attempts have timeouts (the attempt would have one of
    0, as after a sleep ending on it).  The policy's own without a deadline.
    (Under :func:`~backoff_iter.testing.no_sleep` a wait is recorded, not
    slept nor bounded.)"""
    sleep, deadline = call.policy.sleep, call.policy.deadline
    if deadline is None:
        return sleep
    left = deadline - call.elapsed()

    def within(seconds: float) -> Any:
        if seconds > left or call._leaves_no_time(seconds, left):  # (the core's rule for sleeps)
            where = "past" if seconds > left else "on"
            raise NoTimeLeft(
                f"the rate limiter's wait of {seconds:g} s would end {where} the deadline"
                f" ({max(left, 0.0):g} s left): no attempt {call.number}"
            )
        return sleeping(sleep, seconds)

    return within


class TimeoutPart(Part):
    """``attempt_timeout``: each attempt's timeout, the next of its values
    (the last one again once they run out), no longer than the deadline
    leaves; the async loops cancel the attempt at it."""

    __slots__ = ("factory",)

    factory: Callable[[], Iterable[float]]

    def __init__(self, factory: Callable[[], Iterable[float]]) -> None:
        self.factory = factory

    def before_attempt(self, call: Call) -> float:
        timeouts: Iterator[Any] | None = call.timeouts
        if timeouts is None:
            timeouts = call.timeouts = _checks.fresh_delays("attempt_timeout", self.factory)
        value = next(timeouts, None)
        if value is None:
            value = call.timeout_last
        else:
            value = call.timeout_last = _checks.wait("attempt_timeout", value)
        deadline = call.policy.deadline
        if deadline is not None:
            value = max(0.0, min(value, deadline - call.elapsed()))
        call.timeout = value
        return 0.0


def timeout_part(name: str, value: object) -> tuple[TimeoutPart, bool]:
    """``attempt_timeout`` checked: a part, and whether it is one-shot."""
    if _checks.is_real(value) or value.__class__ is int:
        seconds = _checks.seconds(name, value, infinite=True)
        return TimeoutPart(functools.partial(itertools.repeat, seconds)), False
    factory, one_shot = _checks.delays_factory(name, value)
    return TimeoutPart(factory), one_shot


# The methods of each option's protocol.
_PROTOCOLS = {
    "budget": ("record_success", "record_failure", "try_retry"),
    "breaker": ("check", "record"),
    "throttle": ("check", "record"),
    "rate_limiter": ("acquire", "aacquire", "record"),
}
_CHECKED: set[type] = set()  # budget classes whose record_success takes `spent`
#: The library's own classes for each option: slotted, so an instance has the
#: methods its class has (none set on it), and a budget's take ``spent``.
_OWN: dict[str, frozenset[type]] = {
    "budget": frozenset({TokenBucket, RetryBudget, RetryQuota}),
    "breaker": frozenset({CircuitBreaker}),
    "throttle": frozenset({AdaptiveThrottle}),
    "rate_limiter": frozenset(),  # (limiters is imported only when used: checked as any other)
}


#: What the wrappers of the library's own parts read from the part's class as a
#: policy is made (a method bound ahead, a signature); the rest they read at each call.
_READ_AHEAD = ("try_retry", "give_back", "record", "_probe_unsent", "_give_back")
#: For each of the library's own part classes met, how many names its dict had
#: and a reader of those it has of these (None: it has none) - read again when a
#: name is added to the class or taken from it (a test double patched in with
#: create=True: a TokenBucket's give_back).
_AHEAD: dict[type, tuple[int, Callable[[type], object] | None]] = {}
#: The most plans kept on one part (a method patched on its class again and
#: again makes a plan of its own each time).
_MOST_KEPT = 16


def kept_plans(
    value: object, here: bool = True
) -> tuple[dict[tuple[object, ...], Any] | None, object] | None:
    """Where the plans of the policies given *value* are kept for the policies
    made after them, and what of its class a plan depends on: for one of the
    library's own budgets, breakers, throttles and rate limiters (of its very
    class: slotted, nothing is set on an instance; a subclass is the user's) a
    dict on the part itself, and the functions of its class that a wrapper
    binds ahead - a method patched on the class later is then part of a new
    plan's key.  None for any other object: each policy works out its own plan.
    Unless the plans are kept *here* (on the first of a policy's parts, not
    the others), no dict is made on the part: None in its place.

    A plan kept on its part holds the part (a cycle: the part is collected
    once nothing else holds it, by the garbage collector).

    >>> from backoff_iter import TokenBucket
    >>> plans, ahead = kept_plans(TokenBucket())
    >>> plans, kept_plans(object())
    ({}, None)
    >>> kept_plans(TokenBucket(), here=False)[0] is None
    True
    """
    kind = type(value)
    own = kind.__dict__  # (not vars(): twice the time)
    ahead = _AHEAD.get(kind)
    if ahead is None or ahead[0] != len(own):
        if "_plans" not in own:  # (declared by the library's own classes only)
            return None
        names = [name for name in _READ_AHEAD if name in own]
        ahead = _AHEAD[kind] = len(own), (operator.attrgetter(*names) if names else None)
    reads = None if ahead[1] is None else ahead[1](kind)
    if not here:
        return None, reads
    plans: dict[tuple[object, ...], Any]
    try:
        plans = value._plans  # type: ignore[attr-defined]
    except AttributeError:  # its first policy
        plans = value._plans = {}  # type: ignore[attr-defined]
    if len(plans) >= _MOST_KEPT:
        plans.clear()
    return plans, reads


def check_part(name: str, value: object) -> None:
    """Refuse *value* for the option *name* unless it is a Part or has the
    methods of that option's protocol (an argument error naming *name*)."""
    if type(value) in _OWN[name] or isinstance(value, Part):  # (type(): a mock may say its spec)
        return
    if isinstance(value, type):  # its methods are there, but unbound: a call would fail later
        raise _checks.ArgumentTypeError(
            name,
            f"{name} must be an instance, got the class {value.__qualname__}:"
            f" {name}={value.__qualname__}(...) was probably meant",
        )
    methods = _PROTOCOLS[name]
    for method in methods:  # (a loop, not all() of a generator: half the time)
        if not callable(getattr(value, method, None)):
            wanted = ", ".join(f"{m}()" for m in methods)
            raise _checks.ArgumentTypeError(
                name, f"{name} must be a Part, or have {wanted} methods, got {_checks.shown(value)}"
            )
    if name == "budget":
        _check_spent(value)


def wrap(name: str, value: Any, every_failure: bool = True) -> Part:
    """*value*, checked for the option *name* (:func:`check_part`), as a part."""
    if isinstance(value, Part):
        return value
    if name == "budget":
        return BudgetPart(value)
    if name == "breaker":
        return BreakerPart(value)
    if name == "throttle":
        return ThrottlePart(value, every_failure)
    return RateLimiterPart(value, every_failure)


def _check_spent(budget: object) -> None:
    """A budget's record_success must take *spent* (the Budget protocol); its
    signature is read once per class - but each time for a budget whose own is
    not its class's (set on the instance, or served by ``__getattr__``)."""
    kind = type(budget)
    record = budget.record_success  # type: ignore[attr-defined]
    of_class = getattr(record, "__func__", None) is getattr(kind, "record_success", None)
    if of_class and kind in _CHECKED:
        return
    import inspect

    try:
        inspect.signature(record).bind(True, 0.0)
    except TypeError:
        raise _checks.ArgumentTypeError(
            "budget",
            f"budget {budget!r}: record_success(first_attempt, spent) must take what"
            " the call's retries spent (the Budget protocol), not only first_attempt",
        ) from None
    except ValueError:  # no signature to read (a builtin): trust it
        pass
    if of_class and len(_CHECKED) < 1024:  # bounded: classes made on the fly are checked each time
        _CHECKED.add(kind)


def user_parts(name: str, value: object) -> tuple[Part, ...]:
    """``parts=``: a :class:`Part`, or an iterable of them."""
    return _checks.several(
        name, value, lambda item: isinstance(item, Part), "a Part or an iterable of Part objects"
    )
