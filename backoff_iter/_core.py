"""The retry core that every driver runs on: a policy, a call, and one loop per form.

- :class:`Policy` holds the options, checked once and shared by all calls;
  what a call needs to know about them (may a success skip the
  bookkeeping? does a retry need more than the next delay?) is derived from
  the options in one place, :meth:`Policy._derive`.
- :class:`Call` is one run of a policy.  Its :meth:`Call.decide` takes the
  outcome of an attempt (an exception, or a result) and makes every
  decision: retry or not, how long to sleep, whether the delays, the
  deadline or the budget leave room, and what to tell the budget and the
  hooks.
- The sync loop is ``for attempt in call: with attempt: ...``: the call is
  an iterator of :class:`Attempt` objects, and :meth:`Attempt.__exit__`
  hands the outcome to :meth:`Call.settle`, which decides and sleeps.  The
  async loop is the same with ``async for`` and ``async with``; the two
  differ only in how they wait (:meth:`Call.settle` and
  :meth:`Call.asettle`).  ``retrying``/``aretrying`` give users these loops;
  ``@retry`` runs its function in them too.
"""

from __future__ import annotations

import functools
import itertools
import math
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, Union, cast

from . import _checks, _sleeping, _timeouts, instrument
from .hints import RETRY_AFTER_MAX, server_wait
from .instrument import RetryEvent

if TYPE_CHECKING:
    from .breakers import Breaker
    from .budgets import Budget
    from .limiters import RateLimiter
    from .throttles import Throttle

__all__ = ["Attempt", "Policy"]

ExceptionFilter = Union[
    type[BaseException],
    tuple[type[BaseException], ...],
    Callable[[BaseException], object],
]
#: What a policy takes as delays: a zero-argument function returning fresh
#: delays for each call (the reusable form), a list or tuple (reusable too),
#: or any one-shot iterable.
Delays = Union[Callable[[], Iterable[float]], Sequence[float], Iterable[float]]
#: ``before_sleep(attempt, outcome, delay)``: *outcome* is the exception, or
#: the result that ``on_result`` asked to retry.
BeforeSleep = Callable[["Attempt", Any, float], object]
#: ``give_up(attempt, outcome)``: the driver stops retrying *outcome*.
GiveUp = Callable[["Attempt", Any], object]


def default_delays() -> Iterator[float]:
    """The delays of a policy given none: 9 retries (10 attempts) of smooth
    jitter from 0.1 s, capped at 5 s, stopping before 45 s of sleep in all.

    Smooth jitter (Polly's default) spreads clients apart like decorrelated
    jitter while each delay stays near the exponential's (0.1, 0.2, 0.4 s
    ... 5 s): no burst of near-zero sleeps as full jitter gives, no long
    tail.  Ten attempts within 45 s is stamina's budget.

    >>> from itertools import islice
    >>> delays = list(default_delays())
    >>> len(delays) <= 9 and sum(delays) <= 45.0 and max(delays) <= 5.0
    True
    """
    from itertools import islice

    from .adaptors import within
    from .strategies import smooth_jitter

    return within(islice(smooth_jitter(0.1, cap=5.0), 9), 45.0)


_NO_RESULT: Any = object()  # an attempt that handed over no result
_END: float = cast(float, object())  # no next attempt (compared by identity)
_LONGEST = _sleeping.LONGEST

# A call's state: its next attempt may come (the first, or after a retry),
# the attempt handed out waits to be entered, runs in its `with` block, or
# the call is over.
_NEXT, _READY, _RUNNING, _DONE = range(4)

#: What a policy keeps of ``on``: the exception classes to match, or the predicate.
Filter = Union[tuple[type[BaseException], ...], Callable[[BaseException], object]]

# Filters already checked, by the `on` they came from, with whether every class
# is an Exception.  Bounded: a program that makes exception classes on the fly
# must not grow it forever.
_FILTERS: dict[object, tuple[Filter, bool]] = {}
_FILTERS_MAX = 256


def _exception_filter(on: object) -> tuple[Filter, bool]:
    """*on* as classes (matched with one isinstance) or a predicate, and whether
    it is classes that are all Exceptions; reject anything else."""
    try:
        return _FILTERS[on]
    except (KeyError, TypeError):  # new, or unhashable
        pass
    if isinstance(on, type) and issubclass(on, BaseException):
        classes: tuple[type[BaseException], ...] = (on,)
    elif isinstance(on, tuple) and all(
        isinstance(c, type) and issubclass(c, BaseException) for c in on
    ):
        classes = on
    elif callable(on) and not isinstance(on, (type, tuple)):
        return cast(Callable[[BaseException], object], on), False
    else:
        raise _checks.ArgumentTypeError(
            "on",
            "on must be an exception class, a tuple of them, or a predicate"
            f" callable(exc) -> bool, got {on!r}",
        )
    if len(_FILTERS) >= _FILTERS_MAX:
        del _FILTERS[next(iter(_FILTERS))]  # the oldest
    checked = _FILTERS[on] = classes, all(issubclass(c, Exception) for c in classes)
    return checked


def matches(on: Filter, only_exceptions: bool, exc: BaseException) -> bool:
    """Is *exc* a failure that ``on`` retries?  Never a BaseException that is
    no Exception (KeyboardInterrupt, cancellation), whatever a predicate says."""
    if only_exceptions:  # classes that are all Exceptions: one isinstance
        return isinstance(exc, on)  # type: ignore[arg-type]
    return isinstance(exc, Exception) and bool(
        isinstance(exc, on) if on.__class__ is tuple else on(exc)  # type: ignore[operator]
    )


def is_async(func: object) -> bool:
    """An async function, a partial of one, or an object whose __call__ is one."""
    import inspect  # on first use: it is slow to import

    method = getattr(type(func), "__call__", None)  # noqa: B004 - the method itself is asked
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(method)


def _check_budget(budget: object) -> None:
    """A budget of the protocol: its three methods, record_success taking *spent*."""
    for method in ("record_success", "record_failure", "try_retry"):
        if not callable(getattr(budget, method, None)):
            raise _checks.ArgumentTypeError(
                "budget",
                "budget must have record_success(), record_failure() and try_retry()"
                f" methods (a TokenBucket, RetryBudget or RetryQuota), got {budget!r}",
            )
    import inspect

    try:
        inspect.signature(budget.record_success).bind(True, 0.0)  # type: ignore[attr-defined]
    except TypeError:
        raise _checks.ArgumentTypeError(
            "budget",
            f"budget {budget!r}: record_success(first_attempt, spent) must take what"
            " the call's retries spent (the Budget protocol), not only first_attempt",
        ) from None
    except ValueError:  # no signature to read (a builtin): trust it
        pass


T = TypeVar("T")


def _part(name: str, part: T, *methods: str) -> T:
    """*part* (a rate limiter, throttle or breaker) if it has *methods*, or None."""
    if part is not None and not all(callable(getattr(part, m, None)) for m in methods):
        wanted = ", ".join(f"{m}()" for m in methods)
        raise _checks.ArgumentTypeError(name, f"{name} must have {wanted} methods, got {part!r}")
    return part


class Policy:
    """The checked options of a retry policy, shared by all its calls.

    An option left at its default is read from the class: a policy made for
    every call (``for attempt in retrying(...)``) sets only what it was given.
    """

    factory: Callable[[], Iterable[float]] = staticmethod(default_delays)
    """Fresh delays for a call."""
    one_shot: bool = False  # made from a one-shot iterable: one loop only
    used: bool = False  # ... which a loop has used
    on: Filter = (Exception,)
    only_exceptions: bool = True  # `on` is classes, each a subclass of Exception
    on_result: Callable[[Any], object] | None = None
    retry_after: Callable[[Any], float | None] | None = None
    retry_after_max: float = RETRY_AFTER_MAX
    deadline: float | None = None
    clock: Callable[[], float] = time.monotonic  # a builtin: no method binding
    sleep: Callable[[float], Any] | None = None
    before_sleep: BeforeSleep | None = None
    give_up: GiveUp | None = None
    budget: Budget | None = None
    name: str = "call"
    observe: tuple[instrument.Hook, ...] = ()
    timeouts: Callable[[], Iterable[float]] | None = None
    rate_limiter: RateLimiter | None = None
    throttle: Throttle | None = None
    breaker: Breaker | None = None
    throttled: Callable[[Any], object] | None = None

    def __init__(
        self,
        delays: Delays | None = None,
        *,
        on: ExceptionFilter = Exception,
        on_result: Callable[[Any], object] | None = None,
        retry_after: Callable[[Any], float | None] | None = None,
        retry_after_max: float = RETRY_AFTER_MAX,
        deadline: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Any] | None = None,
        before_sleep: BeforeSleep | None = None,
        give_up: GiveUp | None = None,
        budget: Budget | None = None,
        name: str = "call",
        observe: instrument.Observe = None,
        attempt_timeout: float | Delays | None = None,
        rate_limiter: RateLimiter | None = None,
        throttle: Throttle | None = None,
        breaker: Breaker | None = None,
        throttled: Callable[[Any], object] | None = None,
    ) -> None:
        if delays is not None:
            kind = delays.__class__
            if kind is list or kind is tuple:  # the common cases, at once
                self.factory = delays.__iter__  # type: ignore[union-attr]
            else:
                self.factory, self.one_shot = _checks.delays_factory("delays", delays)
        if on is not Exception:
            self.on, self.only_exceptions = _exception_filter(on)
        if sleep is not None:
            self.sleep = _checks.optional_function("sleep", sleep)
        if (
            on_result is None
            and retry_after is None
            and retry_after_max is RETRY_AFTER_MAX
            and deadline is None
            and clock is time.monotonic
            and before_sleep is None
            and give_up is None
            and budget is None
            and name == "call"
            and observe is None
            and attempt_timeout is None
            and rate_limiter is None
            and throttle is None
            and breaker is None
            and throttled is None
        ):
            return  # the rest at their defaults, and so what they mean (the class's)
        self.on_result = _checks.optional_function("on_result", on_result)
        self.retry_after = _checks.optional_function("retry_after", retry_after)
        if retry_after_max is not RETRY_AFTER_MAX:
            self.retry_after_max = _checks.seconds(
                "retry_after_max", retry_after_max, infinite=True
            )
        if deadline is not None:
            self.deadline = _checks.seconds("deadline", deadline, infinite=True)
        if clock is not time.monotonic:
            _checks.function("clock", clock)
            self.clock = clock
        self.before_sleep = _checks.optional_function("before_sleep", before_sleep)
        self.give_up = _checks.optional_function("give_up", give_up)
        if budget is not None:
            _check_budget(budget)
            self.budget = budget
        if name != "call":
            self.name = _checks.text("name", name)
        self.observe = instrument.hooks(observe)
        if attempt_timeout is not None:
            if _checks.is_real(attempt_timeout) or attempt_timeout.__class__ is int:
                seconds = _checks.seconds("attempt_timeout", attempt_timeout, infinite=True)
                self.timeouts = functools.partial(itertools.repeat, seconds)
            else:
                self.timeouts, one_shot = _checks.delays_factory("attempt_timeout", attempt_timeout)
                self.one_shot = self.one_shot or one_shot
        self.rate_limiter = _part("rate_limiter", rate_limiter, "acquire", "aacquire", "record")
        self.throttle = _part("throttle", throttle, "check", "record")
        self.breaker = _part("breaker", breaker, "check", "record")
        self.throttled = _checks.optional_function("throttled", throttled)
        self._derive()

    def _derive(self) -> None:
        """What the options mean for a call, in one place."""
        # Parts told the outcome of every attempt.
        self.told = (self.rate_limiter, self.throttle, self.breaker) != (None, None, None)
        # Something to do before each attempt: ask those parts, set its timeout.
        self.guarded = self.told or self.timeouts is not None
        # The first try may run bare: nothing judges its result, sees it or
        # guards it; a success is at most told to the budget.  (Hooks enabled
        # for the whole process are checked at each call.)
        self.fast = self.on_result is None and not self.observe and not self.guarded
        # ... and not even told to a budget: a success is the end, nothing more.
        self.quiet = self.fast and self.budget is None
        # A retry is just the next delay: no hint, deadline or budget to apply.
        self.simple = self.retry_after is None and self.deadline is None and self.budget is None
        # Someone reads the call's start time: a deadline, or a hook's attempt.elapsed.
        self.timed = (
            self.deadline is not None or self.before_sleep is not None or self.give_up is not None
        )
        # Some hook wants to see the Attempt of the first try.
        self.observed = self.before_sleep is not None or self.give_up is not None

    # What the defaults mean, as _derive() finds them (a test checks it).
    told: bool = False
    guarded: bool = False
    timed: bool = False
    observed: bool = False
    fast: bool = True
    quiet: bool = True
    simple: bool = True

    def claim(self) -> None:
        """Refuse a second loop over a policy made from a one-shot iterator."""
        if self.used:
            raise RuntimeError(
                "this retry policy was made from a one-shot iterator of delays,"
                " which its first loop used up; pass a function returning fresh"
                " delays (lambda: islice(exponential(0.1), 5)) or a list to"
                " reuse the policy"
            )
        self.used = True

    def call(self, in_async: bool = False, shown: bool = True) -> Call:
        """A new run of this policy (a one-shot policy allows one).  *shown*:
        its attempts are the loop's, every one telling its ``elapsed`` time;
        ``@retry``'s are seen only by hooks."""
        if self.one_shot:
            self.claim()
        return Call(self, self.clock(), in_async, shown=shown)


class Attempt:
    """One attempt of a retry loop; run it in ``with attempt:`` (``async with``).

    A failure the policy retries is swallowed when the block exits, after
    the sleep before the next attempt; any other failure propagates from the
    block, as if there were no loop.
    """

    number: int
    """This attempt's number, from 1."""
    delay: float
    """The seconds slept before it (0.0 for the first)."""
    elapsed: float
    """Seconds from the start of the first attempt to the start of this one, per ``clock``."""
    timeout: float | None = None
    """Seconds this attempt may take (``attempt_timeout``, shortened to the
    deadline), or None without ``attempt_timeout``.  The async loops cancel
    the attempt at its timeout; in a sync loop, hand it to your call
    (``requests.get(url, timeout=attempt.timeout)``)."""

    # Set only when used: an attempt that succeeds at once sets what __init__ sets.
    _result: Any = _NO_RESULT  # handed over by set_result()
    _bug: BaseException | None = None  # the caller's own error, from retry_after()
    _scope: Any = None  # the timeout scope of an async attempt

    def __init__(
        self, call: Call, number: int, delay: float, elapsed: float, timeout: float | None = None
    ) -> None:
        self._call = call
        self.number = number
        self.delay = delay
        self.elapsed = elapsed
        if timeout is not None:
            self.timeout = timeout

    def retry_after(self, seconds: float) -> None:
        """Make the next sleep at least *seconds* long (a server's ``Retry-After``).

        The hint is clamped to the policy's ``retry_after_max``; if the wait
        would end past the deadline, no further attempt is made.  A negative,
        NaN or non-number *seconds* is a bug of the caller: its error
        propagates, never retried.
        """
        try:
            self._call.hint = server_wait(seconds, self._call.policy.retry_after_max, "seconds")
        except (TypeError, ValueError) as error:
            self._bug = error
            raise

    def set_result(self, value: T) -> T:
        """Hand the attempt's result to the policy's ``on_result``, and return it.

        In the loop forms, call it inside ``with attempt:``: a result that
        ``on_result`` accepts is retried like a failure, and when the retries
        run out the loop ends with that last result in your variable.
        """
        self._result = value
        return value

    def __enter__(self) -> Attempt:
        call = self._call
        if call.state != _READY or call.number != self.number or call.in_async:
            call.misuse(self, "with")
        call.state = _RUNNING
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        call = self._call
        if call.state != _RUNNING or call.number != self.number:
            call.misuse(self, "with")
        if exc is None and call.quiet:  # a success nobody needs told of
            call.state = _DONE
            return False
        if exc is not None and exc is self._bug:
            return call.stop(exc)
        return call.settle(self, exc, self._result)

    async def __aenter__(self) -> Attempt:
        call = self._call
        if call.state != _READY or call.number != self.number or not call.in_async:
            call.misuse(self, "async with")
        call.state = _RUNNING
        if self.timeout is not None:
            self._scope = _timeouts.scope(self.timeout)
            await self._scope.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        call = self._call
        if call.state != _RUNNING or call.number != self.number:
            call.misuse(self, "async with")
        if exc is None and call.quiet:  # a success nobody needs told of (and no timeout)
            call.state = _DONE
            return False
        expired = None
        if self._scope is not None:  # the attempt's timeout: its expiry is a TimeoutError
            expired = await self._scope.__aexit__(exc_type, exc, traceback)
            self._scope = None
            if expired is not None:
                exc = expired
        if exc is not None and exc is self._bug:
            return call.stop(exc)
        if await call.asettle(self, exc, self._result):
            return True
        if expired is not None:
            raise expired
        return False

    def __repr__(self) -> str:
        return f"<Attempt number={self.number} delay={self.delay!r} elapsed={self.elapsed!r}>"


_current_task: Callable[[], Any] | None = None  # asyncio.current_task, once asyncio is loaded


def cancellations() -> tuple[Any, int]:
    """The asyncio task running now and its pending cancellation requests, or
    (None, 0): outside a task, and before Python 3.11, which does not count them."""
    global _current_task
    current_task = _current_task
    if current_task is None:
        asyncio = sys.modules.get("asyncio")
        if asyncio is None or sys.version_info < (3, 11):
            return None, 0
        current_task = _current_task = asyncio.current_task
    try:
        task = current_task()
    except RuntimeError:  # no asyncio loop running: trio, or a coroutine driven by hand
        return None, 0
    return (None, 0) if task is None else (task, task.cancelling())


_ids = itertools.count(1).__next__  # call ids for the hooks' events
_tuple_new = tuple.__new__


class Call:
    """One run of a policy: the iterator of its attempts, and every decision."""

    # A call that succeeds at once only sets what __init__ sets: the rest
    # starts from these class defaults.
    number: int = 1  # of the current attempt, or the next one to run
    delay: float = 0.0  # slept before the current attempt
    slept: float = 0.0  # slept in all, so far
    hint: float | None = None  # from attempt.retry_after()
    in_async: bool = False  # an async loop
    _delays: Iterator[float] | None = None  # made at the first failure
    _last: bool = False  # the deadline shortened the last sleep
    _spent: float = 0.0  # what the budget's try_retry took for this call
    _task: Any = None  # the asyncio task of an async call (3.11+) ...
    _cancelling: int = 0  # ... and its pending cancellations when the call began
    _id: int = 0  # for the hooks' events, given at the first one
    _timeouts: Iterator[float] | None = None  # made before the first attempt
    _timeout_last: float = math.inf  # once the timeouts run out, the last one again
    _stamp: bool = False  # attempts tell their elapsed time (0.0 when nobody reads it)
    quiet: bool = False  # a success is the end: no budget, hook or part to tell
    policy: Policy
    start: float  # the clock when the first attempt began (-inf: no finite reading yet)
    state: int
    _time: float  # the latest good reading of the clock
    _hooks: tuple[instrument.Hook, ...]

    def __init__(
        self,
        policy: Policy,
        start: float,
        in_async: bool = False,
        cancelling: tuple[Any, int] | None = None,
        shown: bool = False,
    ) -> None:
        self.policy = policy
        # The clock when the first attempt began; a reading that is not
        # finite waits for the first one that is (no time passed before it).
        if -math.inf < start < math.inf:
            self.start = self._time = start
        else:
            self.start = self._time = -math.inf
        self.state = _NEXT
        if in_async:
            self.in_async = True
            # A retry is refused only once the task's count of pending
            # cancellations has grown since the call began (on 3.11 and 3.12 a
            # task that handled a TaskGroup's error keeps it at 1 for good).
            self._task, self._cancelling = cancelling or cancellations()
        # The hooks that see this call's events: its policy's and the process's.
        enabled = instrument.enabled
        if enabled:
            self._hooks = policy.observe + tuple(enabled)
        else:
            self._hooks = policy.observe
            self.quiet = policy.quiet
        # Someone reads each attempt's elapsed time: the loop's body, a hook,
        # or the deadline shortening a timeout (else no clock is read for it).
        if shown or policy.observed or policy.deadline is not None:
            self._stamp = True

    # -- the loops: iterate the call, run each attempt in `with attempt:` -------

    def __iter__(self) -> Call:
        return self

    def __next__(self) -> Attempt:
        if self.state == _NEXT:
            if self.policy.guarded:
                self.admit()
            return self._attempt()
        raise self._over(StopIteration)

    def __aiter__(self) -> Call:
        return self

    async def __anext__(self) -> Attempt:
        if self.state == _NEXT:
            if self.policy.guarded:
                self.admit(wait=False)
                if self.policy.rate_limiter is not None:
                    await self.policy.rate_limiter.aacquire(self.policy.sleep)
            return self._attempt()
        raise self._over(StopAsyncIteration)

    def _attempt(self) -> Attempt:
        """The attempt that may run now, handed out to be entered."""
        self.state = _READY
        number = self.number
        elapsed = self.elapsed() if number > 1 and self._stamp else 0.0
        timeout = None if self.policy.timeouts is None else self._timeout(elapsed)
        return Attempt(self, number, self.delay, elapsed, timeout)

    def _over(self, end: type[Exception]) -> Exception:
        """The error ending a loop that asks for an attempt: *end* once the
        call is over, RuntimeError when the last attempt never ran."""
        if self.state == _DONE:
            return end()
        return RuntimeError(
            f"attempt {self.number} of this retry loop never ran in"
            " `with attempt:`, so its outcome is unknown: put the loop body"
            " in `with attempt:`"
        )

    def admit(self, wait: bool = True) -> None:
        """Before each attempt: the breaker and the throttle may refuse it (their
        error ends the call, the attempt never runs); the rate limiter may make
        it wait (here when *wait*; the async loop awaits it itself)."""
        policy = self.policy
        try:
            if policy.breaker is not None:
                policy.breaker.check()
            if policy.throttle is not None:
                policy.throttle.check()
        except Exception as refused:
            self.state = _DONE
            if self._hooks:
                self.emit("error", refused, self.number)
            raise
        if wait and policy.rate_limiter is not None:
            policy.rate_limiter.acquire(policy.sleep)

    def misuse(self, attempt: Attempt, statement: str) -> None:
        """Raise the error that says how an Attempt was misused."""
        if self.in_async != (statement == "async with"):
            right = "async with" if self.in_async else "with"
            raise TypeError(f"use `{right} attempt:` with this loop, not `{statement}`")
        raise RuntimeError(
            f"{attempt!r} is not the current attempt of a running retry loop:"
            " use each attempt once, in its own iteration"
        )

    def _timeout(self, elapsed: float) -> float:
        """The next attempt's timeout: the next of attempt_timeout's values (the
        last one again once they run out), no longer than the deadline leaves."""
        timeouts = self._timeouts
        if timeouts is None:
            timeouts = self._timeouts = _checks.fresh_delays(
                "attempt_timeout",
                self.policy.timeouts,  # type: ignore[arg-type]
            )
        value = next(timeouts, _END)
        if value is _END:
            value = self._timeout_last
        else:
            value = self._timeout_last = _sleeping.seconds(value, "attempt_timeout")
        deadline = self.policy.deadline
        if deadline is not None:
            value = max(0.0, min(value, deadline - elapsed))
        return value

    def elapsed(self) -> float:
        """Seconds since the first attempt began, per the policy's clock.  A
        reading that goes back, or is not finite, counts as no time passed."""
        now = self.policy.clock()
        last = self._time
        if last <= now < math.inf:  # NaN fails this too
            if last == -math.inf:  # the first finite reading: the call starts now
                self.start = now
            self._time = last = now
        return last - self.start if last > -math.inf else 0.0

    # -- after each attempt: decide, then wait ------------------------------------

    def settle(self, attempt: Attempt | None, exc: BaseException | None, result: Any) -> bool:
        """The sync loop's step: decide on the outcome; True when the call
        retries (it has slept), False when the outcome stands."""
        if attempt is None and self.policy.observed:  # @retry's first try, for the hooks
            attempt = Attempt(self, 1, 0.0, 0.0)
        delay = self.decide(attempt, exc, result)
        if delay is None:
            return False
        hook = self.policy.before_sleep
        if hook is not None:
            returned = hook(attempt, result if exc is None else exc, delay)  # type: ignore[arg-type]
            if returned is not None:
                _sleeping.refuse_awaitable(returned, hook, "before_sleep")
            delay = self._fit(delay)
        if self._hooks:
            self.emit("retry", result if exc is None else exc, self.number - 1, delay)
        _sleeping.sleep(self.policy.sleep, delay)
        self.slept += delay
        return True

    async def asettle(
        self, attempt: Attempt | None, exc: BaseException | None, result: Any
    ) -> bool:
        """The async loop's step: :meth:`settle`, awaiting an async hook and sleep."""
        task = self._task
        if exc is not None and task is not None and task.cancelling() > self._cancelling:
            self._refuse()
        if attempt is None and self.policy.observed:  # @retry's first try, for the hooks
            attempt = Attempt(self, 1, 0.0, 0.0)
        delay = self.decide(attempt, exc, result)
        if delay is None:
            return False
        hook = self.policy.before_sleep
        if hook is not None:
            returned = hook(attempt, result if exc is None else exc, delay)  # type: ignore[arg-type]
            if returned is not None and hasattr(returned, "__await__"):
                await cast(Awaitable[Any], returned)
            delay = self._fit(delay)
        if self._hooks:
            self.emit("retry", result if exc is None else exc, self.number - 1, delay)
        await _sleeping.asleep(self.policy.sleep, delay)
        self.slept += delay
        return True

    def stop(self, exc: BaseException) -> bool:
        """End the call on *exc* without a decision (the caller's own bug)."""
        self.state = _DONE
        if self._hooks:
            self.emit("error", exc, self.number)
        return False

    def _refuse(self) -> None:
        """The task was asked to cancel since the call began: no retry.

        A TaskGroup can turn the task's own cancellation (from ``asyncio.timeout``,
        say) into an ordinary failure: retrying it would run on past the timeout.
        """
        self.state = _DONE
        import asyncio

        raise asyncio.CancelledError("the task is being cancelled: no retry")

    def _fit(self, delay: float) -> float:
        """*delay*, shortened so the sleep still ends by the deadline after a
        before_sleep hook took its time."""
        deadline = self.policy.deadline
        if deadline is not None:
            remaining = deadline - self.elapsed()
            if delay > remaining:
                self.delay = delay = max(0.0, remaining)
        return delay

    def emit(
        self,
        kind: str,
        outcome: Any,
        number: int,
        delay: float | None = None,
        reason: str | None = None,
    ) -> None:
        """Tell every hook of the call what happened to attempt *number*."""
        if not self._id:
            self._id = _ids()
        # Made as the tuple it is: a NamedTuple's own __new__ is Python code, twice as slow.
        event: RetryEvent = _tuple_new(
            RetryEvent,
            (
                kind,
                self.policy.name,
                number,
                outcome,
                delay,
                self.slept,
                self.elapsed(),
                reason,
                self._id,
            ),
        )
        for hook in self._hooks:
            hook(event)

    # -- the decision ---------------------------------------------------------------

    def decide(
        self, attempt: Attempt | None, exc: BaseException | None, result: Any
    ) -> float | None:
        """The outcome of the current attempt in, the sleep before the next out.

        *exc* is the attempt's exception (None if it returned); *result* its
        result when there is one.  None means the outcome stands: a success,
        a failure not to retry, or no room left to retry (the delays ran out,
        the deadline or the budget say no, or the delay is too long to
        sleep).  The caller then raises the exception or returns the result.
        """
        policy = self.policy
        budget = policy.budget
        self.state = _DONE  # unless a retry follows
        if exc is not None:
            if not matches(policy.on, policy.only_exceptions, exc):
                if policy.told:
                    self._tell(exc, failed=False)
                if self._hooks:
                    self.emit("error", exc, self.number)
                return None
            outcome: Any = exc
        elif policy.on_result is not None and result is _NO_RESULT:
            raise RuntimeError(
                "on_result was given, but the attempt handed over no"
                " result: call attempt.set_result(value) in the block"
            )
        elif policy.on_result is not None and policy.on_result(result):
            outcome = result
        else:
            if policy.told:
                self._tell(result, failed=False)
            if budget is not None:
                budget.record_success(self.number == 1, self._spent)
            if self._hooks:  # a loop body that returned handed over no result
                self.emit("success", None if result is _NO_RESULT else result, self.number)
            return None
        if policy.told:
            self._tell(outcome, failed=True)
        if budget is not None:
            budget.record_failure(self.number == 1)
        # The schedule is made at the first failure, then drawn one delay per retry.
        delays = self._delays
        if delays is None:
            delays = self._delays = _checks.fresh_delays("delays", policy.factory)
        if self._last:  # the deadline shortened the last sleep: no room for another
            delay, reason = _END, "deadline"
        else:
            delay, reason = next(delays, _END), "exhausted"
        if delay.__class__ is not float or not 0.0 <= delay <= _LONGEST:
            delay = _END if delay is _END else _sleeping.seconds(delay)
            if delay == math.inf:
                delay = _END  # an infinite wait is no next attempt
        if delay is not _END and (self.hint is not None or not policy.simple):
            delay, reason = self._limit(delay, outcome)
        if delay is _END:
            if policy.give_up is not None:
                policy.give_up(attempt, outcome)  # type: ignore[arg-type]
            if self._hooks:
                self.emit("give_up", outcome, self.number, reason=reason)
            return None
        self.number += 1
        self.delay = delay
        self.state = _NEXT
        return delay

    def _tell(self, outcome: Any, failed: bool) -> None:
        """Tell the rate limiter, the throttle and the breaker how an attempt went.

        *failed*: a failure the policy retries (it counts against the
        breaker); a throttle is such a failure that ``throttled`` (by
        default, any) says the server pushed back with."""
        policy = self.policy
        throttled = failed and (policy.throttled is None or bool(policy.throttled(outcome)))
        if policy.rate_limiter is not None:
            policy.rate_limiter.record(throttled)
        if policy.throttle is not None:
            policy.throttle.record(not throttled)
        if policy.breaker is not None:
            policy.breaker.record(not failed)

    def _limit(self, delay: float, outcome: Any) -> tuple[float, str]:
        """*delay* raised to the server's hint and fitted to the deadline and
        the budget; (_END, why) if they leave no room for a retry."""
        policy = self.policy
        hint, self.hint = self.hint, None
        if policy.retry_after is not None:
            asked = policy.retry_after(outcome)
            if asked is not None:
                asked = server_wait(asked, policy.retry_after_max)
                if hint is None or asked > hint:
                    hint = asked
        if hint is not None and hint > delay:
            delay = hint
        if policy.deadline is not None:
            remaining = policy.deadline - self.elapsed()
            if remaining <= 0 or (hint is not None and hint > remaining):
                return _END, "deadline"  # no room left, or not for the wait the server asked
            if delay > remaining:  # shortened to end at the deadline: the last try
                delay = remaining
                self._last = True
        if policy.budget is not None:
            taken = policy.budget.try_retry(outcome)
            if not taken:
                return _END, "budget"
            self._spent += taken
        return delay, ""
