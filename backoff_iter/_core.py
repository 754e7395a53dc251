"""The retry core that every driver runs on: a call, its attempts, and one decision.

- :class:`~backoff_iter._options.Policy` holds the options, checked once
  and shared by all calls, and what they mean for a call (its parts, in
  order, and the shortcuts a call may take).
- :class:`Call` is one run of a policy.  :meth:`Call.admit` asks the parts
  before each attempt; :meth:`Call.decide` takes the outcome of an attempt
  (an exception, or a result) and makes every decision: retry or not, how
  long to sleep, whether the delays, the deadline and the parts leave room,
  and what to tell the parts and the hooks.
- The sync loop is ``for attempt in call: with attempt: ...``: the call is
  an iterator of :class:`~backoff_iter._attempt.Attempt` objects (their
  own module), and ``Attempt.__exit__``
  hands the outcome to :meth:`Call.settle`, which decides and sleeps.  The
  async loop is the same with ``async for`` and ``async with``; the two
  differ only in how they wait (:meth:`Call.settle` and
  :meth:`Call.asettle`).  ``retrying``/``aretrying`` give users these
  loops; ``RetryTransport`` and hedging run in them too, ``@retry`` in
  the same steps without the ``with`` (``Call.__next__``, then
  :meth:`Call.settle` on the outcome), and the overload simulator drives
  :meth:`Call.admit` and :meth:`Call.decide`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any, cast

from . import _checks, _sleeping, instrument
from ._attempt import _DONE, _NEXT, _NO_RESULT, _READY, _RUNNING, Attempt
from ._cancelling import (
    TrioCancelling,
    cancellations,
    cancelled_under_trio,
    no_retry_if_cancelled,
    no_retry_if_cancelled_under_trio,
)
from ._filters import matches
from ._options import CallPlan, Policy
from ._sliding import NOT_YET, steady
from .hints import clamped, raised
from .parts import ERROR, FAILURE, SUCCESS, THROTTLE, tell_each
from .schedules import END as _PICKED_END
from .schedules import Deferred

if TYPE_CHECKING:
    from .parts import Drops

__all__ = ["Call", "begin"]

_END: float = cast(float, object())  # no next attempt (compared by identity)
# The process's hooks, read by key from the module's namespace at each call:
# ``instrument`` has a module ``__getattr__`` (its backends load lazily), and
# Python 3.11 reads no attribute of such a module quickly (about 90 ns each).
_PROCESS = vars(instrument)
_INF = math.inf
_tuple_new = tuple.__new__
_RetryEvent = instrument.RetryEvent

#: What names the answer of a part's allow_retry that is no number in its error.
_TAKEN = "what allow_retry took (a budget's try_retry: a bool or a number)"

#: A schedule that has run this many retries, or given a delay this long,
#: with no deadline, is taken for one with no end: its policy warns once.
ENDLESS_RETRIES = 100
ENDLESS_DELAY = 3600.0


def begin(policy: Policy, in_async: bool = False, shown: bool = True) -> Call:
    """A new run of *policy* (a one-shot policy allows one).  *shown*: its
    attempts are the loop's, every one telling its ``elapsed`` time;
    ``@retry``'s are seen only by hooks."""
    if policy.one_shot:
        policy.claim()
    return Call(policy, policy.clock(), in_async, None, shown)


def hooks_now(policy: Policy) -> tuple[instrument.Hook, ...]:
    """The hooks a call of *policy* beginning now is told of: its own, then
    the process's that hear every event (a call keeps those it began with)."""
    observe, every = policy.observe, _PROCESS["every"]
    if observe and every:
        every = instrument.beside(observe, every, _PROCESS["failures"])[0]
    return observe + every if every else observe


def success_teller(policy: Policy) -> Callable[[tuple[instrument.Hook, ...], float, Any], None]:
    """How ``@retry``'s bare first try tells its hooks of a success:
    ``tell(hooks, start, result)``, for a try begun at *start* by the policy's
    clock, *hooks* listening; they hear of it as a call's would tell them.
    What it reads of the policy is read once, here."""
    name, clock = policy.name, policy.clock
    new_call_id, made = instrument.new_call_id, instrument.RetryEvent

    def tell(hooks: tuple[instrument.Hook, ...], start: float, result: Any) -> None:
        # (the event made here as the tuple it is: instrument.event's call costs a fifth)
        event = _tuple_new(
            made, ("success", name, 1, result, None, 0.0, clock() - start, None, new_call_id())
        )
        for hook in hooks:
            hook(event)

    if policy.steady_clock:
        return tell

    def tell_guarded(hooks: tuple[instrument.Hook, ...], start: float, result: Any) -> None:
        # a clock of the user's, read through a call's guard
        elapsed = Call(policy, start, process_hooks=False).elapsed()
        event = instrument.event(
            "success", name, 1, result, None, 0.0, elapsed, None, new_call_id()
        )
        for hook in hooks:
            hook(event)

    return tell_guarded


def rejected(policy: Policy, result: Any, start: float | None) -> bool:
    """Whether ``on_result`` rejects the *result* of ``@retry``'s bare first
    try (begun at *start*), with no call made for it unless the predicate
    raises: then, as in ``Call.rejects``, the call ends with its error."""
    try:
        return bool(policy.on_result(result))  # type: ignore[misc]
    except BaseException as error:
        Call(policy, start).stop(error)
        raise


def tell_refused(
    policy: Policy, hooks: tuple[instrument.Hook, ...], start: float, refused: BaseException
) -> None:
    """A breaker's or a throttle's check refused ``@retry``'s bare first try
    (begun at *start*, *hooks* listening): they hear of it as a call's would
    tell them."""
    _told_call(policy, hooks, start)._refused(refused)


def tell_broken(
    policy: Policy, hooks: tuple[instrument.Hook, ...], start: float, error: BaseException
) -> None:
    """A part raised as ``@retry``'s bare first try (begun at *start*, *hooks*
    listening) told it of its success: the call ends with *error*, which they
    hear as a call's ``"error"``."""
    _told_call(policy, hooks, start).tell_error(error, 1)


def _told_call(policy: Policy, hooks: tuple[instrument.Hook, ...], start: float) -> Call:
    """A call of *policy* for ``@retry``'s bare first try, begun at *start*:
    what it tells goes to *hooks*, those listening as it began."""
    call = Call(policy, start, process_hooks=False)
    call._hooks = hooks
    return call


def dropped(drops: Drops, passed: int) -> None:
    """The attempt the first *passed* parts asked before it let go will not
    run (a part after them refused it): each gives back what it held for it,
    newest first (``Part.attempt_dropped``; *drops*, a plan's ``before_drops``
    or ``abefore_drops``)."""
    for drop in reversed(drops[:passed]):
        if drop is not None:
            drop(0.0)


def _no_room(outcome: Any, kind: str) -> Any:
    """The draw once the deadline shortened a call's last sleep: no next attempt."""
    return _PICKED_END


class Call:
    """One run of a policy: the iterator of its attempts, and every decision.

    What a part reads of it (:meth:`~backoff_iter.Part.before_attempt`):
    ``number``, ``last``, ``policy``, ``elapsed()``, and ``timeout``.
    """

    # What every attempt or retry reads is a slot, set by __init__ (but
    # _pick, set with _delays at the first failure, and _task, set for async
    # calls only): a call that succeeds quietly makes no dict, and slot reads
    # are quick on every Python (a class default read through an instance is
    # slow on 3.11, and one that the instance shadows on 3.12+).  What only
    # some calls use starts from these class defaults, set (in the instance's
    # dict) when used.
    __slots__ = (
        "policy",
        "plan",
        "state",
        "number",
        "last",
        "delay",
        "slept",
        "hint",
        "timeout",
        "in_async",
        "quiet",
        "_stamp",
        "_task",
        "_delays",
        "_pick",
        "_hooks",
        "_failure_hooks",
        "_retries_heard",
        "_retry_hooks",
        "start",
        "_time",
        "__dict__",
        "__weakref__",
    )
    took: tuple[float, ...] = ()  # what each allow_retry took for the call's last retry
    _earlier: tuple[float, ...] = ()  # ... and for the one before, should that one be dropped
    timeouts: Iterator[Any] | None = None  # the attempt timeouts' schedule, for its part
    timeout_last: float = _INF  # ... and its latest value
    reason: str | None = None  # why the call gave up, once it did ("exhausted", "budget"...)
    refused: Any = None  # a delay whose jitter a part's refusal left undrawn (per_failure)
    _final: bool = False  # the deadline shortened the last sleep
    _cancelling: int = 0  # the pending cancellations of an async call's task when it began
    _id: int = 0  # for the hooks' events, given at the first one
    _fresh_from: int = 0  # the attempt whose failure drew a restarted schedule's first delay
    _took: tuple[float, ...] = ()  # what each part's allow_retry took for the next attempt
    misused: BaseException | None = None  # the misuse of an attempt that ended the call

    policy: Policy
    plan: CallPlan  # what the policy's options mean for the call
    state: int  # where the loop is (see _attempt.py)
    number: int  # of the current attempt, or the next one to run
    last: BaseException | None  # the latest failure retried
    delay: float  # slept before the current attempt
    slept: float  # slept in all, so far
    hint: float | None  # from attempt.retry_after()
    timeout: float | None  # of the next attempt, set by a part
    in_async: bool  # an async loop
    quiet: bool  # a success is the end: no part or hook to tell
    _stamp: bool  # attempts tell their elapsed time (0.0 when nobody reads it)
    _task: Any  # the asyncio task of an async call (3.11+), set for those only
    _delays: Iterator[float] | None  # made at the first failure ...
    _pick: Callable[[Any, str], Any] | None  # ... with its next_for, if per kind of failure
    _hooks: tuple[instrument.Hook, ...]  # told of every event
    _failure_hooks: tuple[instrument.Hook, ...]  # told of retries and give-ups
    _retries_heard: bool  # False: no hook hears retries (none, or none wanted the first)
    _retry_hooks: tuple[instrument.Hook, ...] | None  # those hearing retries, asked at the first
    start: float  # the first steady reading of the clock (NOT_YET: none so far)
    _time: float  # the latest steady reading

    def __init__(
        self,
        policy: Policy,
        start: float | None,
        in_async: bool = False,
        cancelling: tuple[Any, int] | None = None,
        shown: bool = False,
        process_hooks: bool = True,
    ) -> None:
        self.policy = policy
        self.plan = plan = policy.plan
        self.state = _NEXT
        self.number = 1
        self.delay = self.slept = 0.0
        self.hint = self.timeout = self.last = self._delays = None
        self._retry_hooks = None
        self.in_async = in_async
        # The first steady reading of the clock starts the call; None: nobody
        # read it when the first attempt began, so the first reading will.
        if start is None:
            self.start = self._time = NOT_YET
        elif policy.steady_clock:
            self.start = self._time = start
        else:
            self.start = self._time = steady(start, NOT_YET)
        if in_async:
            self._task, self._cancelling = cancelling or cancellations()
        # The hooks that see this call's events: its policy's and the process's
        # (none for a simulated client: process_hooks False); those of the
        # process that want only retries and give-ups hear only those.
        observe = policy.observe  # (read once: a class default is read slowly on 3.11)
        if process_hooks:
            every, failures = _PROCESS["every"], _PROCESS["failures"]
            if observe and (every or failures):  # a hook of its own heard once
                every, failures = instrument.beside(observe, every, failures)
        else:
            every = failures = ()
        hooks = observe + every if every else observe
        self._hooks = hooks
        if hooks:
            self.quiet = False
            self._failure_hooks = hooks + failures
            self._retries_heard = True
        else:  # nobody hears a success: quiet if the policy has nothing to tell either
            self.quiet = plan.quiet
            self._failure_hooks = failures
            self._retries_heard = bool(failures)
        # Someone reads each attempt's elapsed time: the loop's body, or a hook
        # (else no clock is read for it; the deadline reads the call's own).
        self._stamp = shown or plan.observed

    # -- the loops: iterate the call, run each attempt in `with attempt:` -------

    def __iter__(self) -> Call:
        return self

    def __next__(self) -> Attempt:
        """The attempt that may run now, handed out to be entered (the parts
        asked first; an async loop asked them in :meth:`__anext__`)."""
        if self.state == _NEXT:
            if self.plan.guarded and not self.in_async:
                self.admit()
            self.state = _READY
            number = self.number
            if number == 1:
                return Attempt(self, 1, 0.0, 0.0, self.timeout)
            self.last = None  # the parts have seen it: hold no failure (nor its frames) any longer
            elapsed = self.elapsed() if self._stamp else 0.0
            return Attempt(self, number, self.delay, elapsed, self.timeout)
        raise self._over(StopIteration)

    def proceed(self) -> Attempt | None:
        """``@retry``'s step to its next attempt: ``__next__``, but an
        Attempt is made only for the hooks that are handed one (``before_sleep``,
        ``give_up``); nobody else holds it, and its timeout is ``call.timeout``."""
        if self.plan.observed:
            return self.__next__()
        if self.plan.guarded and not self.in_async:
            self.admit()
        # (The state stays _NEXT: it is for an Attempt's `with`, which nobody enters here.)
        self.last = None  # the parts have seen it: hold no failure (nor its frames) any longer
        return None

    def __aiter__(self) -> Call:
        return self

    async def __anext__(self) -> Attempt:
        if self.state == _NEXT:
            plan = self.plan
            if plan.guarded:
                passed = 0  # the parts that let the attempt go
                try:
                    for before, is_async in plan.abefores:
                        if is_async:
                            await before(self)
                        else:
                            before(self)
                        passed += 1
                except BaseException as refused:  # a refusal, or the wait interrupted
                    self._drop(plan.abefore_drops, passed)
                    self._refused(refused)
                    raise
            return self.__next__()
        raise self._over(StopAsyncIteration)

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

    def admit(self) -> float:
        """Before each attempt: every part may refuse it (its error ends the
        call, the attempt never runs), make it wait or set its timeout.
        Returns the seconds the parts made it wait."""
        waited = 0.0
        passed = 0  # the parts that let the attempt go
        try:
            for before in self.plan.befores:
                waited += before(self)
                passed += 1
        except BaseException as refused:  # a refusal, or the wait interrupted
            self._drop(self.plan.before_drops, passed)
            self._refused(refused)
            raise
        return waited

    def _drop(self, drops: Drops = (), passed: int = 0) -> None:
        """The next attempt will not run: the parts that let it go give back
        what they held for it - the first *passed* of *drops* (the befores'),
        then what each ``allow_retry`` took - newest first."""
        dropped(drops, passed)
        took, self._took = self._took, ()
        if took and took is self.took:  # the call's last retry never runs: the one before was
            self.took = self._earlier
        for drop, taken in zip(reversed(self.plan.allow_drops[: len(took)]), reversed(took)):
            if drop is not None:
                drop(taken)

    def _refused(self, refused: BaseException, reason: str = "refused") -> None:
        """A part refused the next attempt (or its wait was interrupted): the
        call ends with its error, which keeps the failure that led to it (the
        call's last, if it retried one; an interruption keeps its own).  The
        hooks hear an ``"error"`` whose *reason* says the attempt never ran."""
        self.state = _DONE
        if self.last is not None and isinstance(refused, Exception):
            refused.__cause__ = self.last  # the call's own failure before the one the part tells
        self.last = None  # the call is over: it keeps no failure (nor its frames)
        self.tell_error(refused, self.number, reason)

    def misuse(self, attempt: Attempt, statement: str, exc: BaseException | None = None) -> bool:
        """Raise the error that says how an Attempt was misused.  Raised inside
        the block of this call's running attempt, it ends the call: the
        caller's bug, never retried; that block's exit, given it as *exc*,
        lets it through (False)."""
        if exc is not None and exc is self.misused:
            return False
        error: Exception
        if self.in_async != (statement == "async with"):
            right = "async with" if self.in_async else "with"
            error = TypeError(f"use `{right} attempt:` with this loop, not `{statement}`")
        else:
            error = RuntimeError(
                f"{attempt!r} is not the current attempt of a running retry loop:"
                " use each attempt once, in its own iteration"
            )
        if self.state == _RUNNING:  # (an attempt of this call entered in its running one's block)
            self.misused = error
            self.stop(error)
        raise error

    def elapsed(self) -> float:
        """Seconds since the first attempt began, per the policy's clock.  A
        reading that goes back, or is not finite, counts as no time passed."""
        policy = self.policy
        now = policy.clock()
        if not policy.steady_clock:
            now = steady(now, self._time)
        self._time = now
        start = self.start
        if start == NOT_YET:  # the first good reading: the call starts now
            self.start = start = now
        return now - start if now > NOT_YET else 0.0

    # -- after each attempt: decide, then wait ------------------------------------

    def settle(
        self, attempt: Attempt | None, exc: BaseException | None, result: Any, judged: bool = False
    ) -> bool:
        """The sync loop's step: decide on the outcome; True when the call
        retries (it has slept), False when the outcome stands.  *judged*: the
        result was rejected by ``on_result`` already (it is asked once)."""
        observed = self.plan.observed  # a hook is handed the attempts (before_sleep, give_up)
        if attempt is None and observed:  # @retry's first try, for the hooks
            attempt = Attempt(self, 1, 0.0, 0.0)
        delay = self.decide(attempt, exc, result, judged)
        if delay is None:
            return False
        told = False  # the hooks heard of the retry (then an error ends the attempt after it)
        try:  # from here to the end of the sleep, what ends the call gives the retry back
            hook = self.policy.before_sleep if observed else None
            if hook is not None:
                outcome = result if exc is None else exc
                returned = hook(cast(Attempt, attempt), outcome, delay)
                if returned is not None:
                    _sleeping.refuse_awaitable(returned, hook, "before_sleep")
                delay = self._fit(attempt, outcome, delay)
                if delay is None:
                    return False
            if self._retries_heard:
                self.emit("retry", result if exc is None else exc, self.number - 1, delay)
            told = True
            if _sleeping.sleep(self.policy.sleep, delay):  # recorded under no_sleep, not slept:
                self.start -= delay  # the call's time goes on as though slept (its deadline)
        except BaseException as error:
            self._cut_short(error, told)
            raise
        self.slept += delay
        return True

    async def asettle(
        self, attempt: Attempt | None, exc: BaseException | None, result: Any, judged: bool = False
    ) -> bool:
        """The async loop's step: :meth:`settle`, awaiting an async hook and sleep."""
        observed = self.plan.observed  # a hook is handed the attempts (before_sleep, give_up)
        if attempt is None and observed:  # @retry's first try, for the hooks
            attempt = Attempt(self, 1, 0.0, 0.0)
        try:
            delay = self.decide(attempt, exc, result, judged)
        except TrioCancelling:  # the task's trio scope is cancelled: its Cancelled ends the call
            try:
                await no_retry_if_cancelled_under_trio()
            except BaseException as cancelled:
                self._broken(cancelled)  # as asyncio's CancelledError out of decide
                raise
            return await self.asettle(attempt, exc, result, judged)  # no longer: decided anew
        if delay is None:
            return False
        told = False  # the hooks heard of the retry (then an error ends the attempt after it)
        try:  # from here to the end of the sleep, what ends the call gives the retry back
            hook = self.policy.before_sleep if observed else None
            if hook is not None:
                outcome = result if exc is None else exc
                returned = hook(cast(Attempt, attempt), outcome, delay)
                if returned is not None and hasattr(returned, "__await__"):
                    await cast("Awaitable[Any]", returned)
                delay = self._fit(attempt, outcome, delay)
                if delay is None:
                    return False
            if self._retries_heard:
                self.emit("retry", result if exc is None else exc, self.number - 1, delay)
            told = True
            if await _sleeping.asleep(self.policy.sleep, delay):  # (as in settle)
                self.start -= delay
        except BaseException as error:
            self._cut_short(error, told)
            raise
        self.slept += delay
        return True

    def _cut_short(self, error: BaseException, told: bool) -> None:
        """Between the decision to retry and the end of the sleep, *error* (the
        task was cancelled, Ctrl-C, a hook or the sleep raised): the call ends
        with it.  What the parts allowed for the retry is given back, and the
        hooks hear an ``"error"`` (a span begun at the first retry ends): once
        they were *told* of the retry, of the attempt that will not run
        (reason ``"interrupted"``); before, of the attempt that failed, as
        though it ended the call (``before_sleep`` raised)."""
        self.last = None  # *error* is not given the retried failure as its cause
        self._drop()
        if told:
            self._refused(error, "interrupted")
        else:  # the attempt that failed has had no event: this one is its
            self.state = _DONE
            self.tell_error(error, self.number - 1)

    # -- what the stream driver (_streams.py) asks: an attempt that spans yields ----

    def running(self, attempt: Attempt) -> Attempt:
        """Mark *attempt* (just handed out) as running, outside any ``with``
        block: a stream's attempt runs across the yields of its items."""
        self.state = _RUNNING
        return attempt

    def committed(self, attempt: Attempt, failure: BaseException) -> None:
        """A stream failed after delivering items and cannot resume: the call
        gives up on *failure* (reason ``"committed"``), which the parts hear
        of as a failure."""
        self.state = _DONE
        self.last = None
        policy = self.policy
        try:
            retried = matches(policy.on, policy.only_exceptions, failure)
        except BaseException as error:  # ``on`` broke: the call ends with its error, as in decide
            self.end_on_error(error)
            raise
        if not retried:  # a failure no policy retries: an error, as for any call
            self.end_on_error(failure)
            return
        kind, told = FAILURE, False
        try:  # what breaks here (``throttled``, a part) ends the call, as in decide
            if policy.throttled is not None and policy.throttled(failure):
                kind = THROTTLE
            told = True
            self.tell_parts(failure, kind, self.number)
        except BaseException as error:
            if not told:
                self._untold(error, failure, kind)
            self._broken(error)
            raise
        self._give_up(attempt, failure, "committed")

    def end_on_error(self, failure: BaseException) -> None:
        """End the call on *failure*, which the policy does not retry: the
        parts hear of an error (the dependency answered), the hooks an
        ``"error"`` event (of a part's error, should one raise as it hears).
        An interruption - a ``BaseException`` that is no ``Exception``: a
        cancellation, ``KeyboardInterrupt`` - is no answer, and the parts
        hear nothing (a cancelled probe is no success)."""
        self.state = _DONE
        self.last = None  # the call is over: it keeps no failure (nor its frames)
        if isinstance(failure, Exception):
            try:
                self.tell_parts(failure, ERROR, self.number)
            except BaseException as error:  # a part broke: the call ends with its error
                self._broken(error)
                raise
        self.tell_error(failure, self.number)

    def abandon(self) -> None:
        """The consumer ended a stream after items (closed it, or threw in
        what ended it): no retry.  The parts hear the attempt end as one the
        dependency answered, its items flowed (a breaker's probe comes back,
        a budget pays nothing); the hooks that hear every end of a call hear
        a ``"closed"`` (the attempt counted, a span begun at a retry ended),
        or the ``"error"`` of a part that broke as it heard."""
        self.state = _DONE
        self.last = None
        try:
            self.tell_parts(None, ERROR, self.number)
        except BaseException as error:  # a part broke: the call ends with its error
            self._broken(error)
            raise
        if self._hooks:
            self.emit("closed", None, self.number)

    def restart_schedule(self) -> None:
        """The next retry draws the first delay of a fresh schedule: a stream
        that delivered items since its last failure has recovered."""
        self._delays = None
        self._fresh_from = self.number

    def rejects(self, result: Any) -> bool:
        """Whether ``on_result`` rejects *result* (a retry may follow).  A
        predicate that raises ends the call with its error (``stop``)."""
        try:
            return bool(self.policy.on_result(result))  # type: ignore[misc]
        except BaseException as error:
            self.stop(error)
            raise

    def stop(self, exc: BaseException) -> bool:
        """End the call on *exc*, the caller's own bug (a bad hint, an Attempt
        misused), without a decision: never retried, whatever ``on`` says.
        The parts and the hooks hear of it as of any error not retried
        (``end_on_error``): a breaker's probe comes back."""
        self.end_on_error(exc)
        return False

    def _fit(self, attempt: Attempt | None, outcome: Any, delay: float) -> float | None:
        """*delay*, shortened so the sleep still ends by the deadline after a
        before_sleep hook took its time; None (the call gives up) when the
        hook ran past the deadline: no attempt starts past it."""
        deadline = self.policy.deadline
        if deadline is not None:
            remaining = deadline - self.elapsed()
            if remaining <= 0.0 or self._leaves_no_time(delay, remaining):
                self.number -= 1
                self.state = _DONE
                self._drop()
                self._give_up(attempt, outcome, "deadline")
                return None
            if delay > remaining:
                self.delay = delay = remaining
        return delay

    def emit(
        self,
        kind: str,
        outcome: Any,
        number: int,
        delay: float | None = None,
        reason: str | None = None,
    ) -> None:
        """Tell the call's hooks what happened to attempt *number*: every hook
        of a success or an error, those of retries too of a retry or give-up
        (and, if they want it, of an error that ends a call after a retry)."""
        if kind == "retry":
            hooks = self._retry_hooks
            if hooks is None:  # asked once per call, at its first retry, not per retry
                hooks = self._retry_hooks = instrument.hearing(self._failure_hooks, kind)
                if not hooks:  # (a quiet logger alone)
                    self._retries_heard = False
        elif kind == "give_up":
            hooks = instrument.hearing(self._failure_hooks, kind)
        else:
            hooks = self._hooks
            if kind == "error" and number > 1 and len(self._failure_hooks) > len(hooks):
                # A call that retried ends with an error: those of the hooks of retries
                # and give-ups that say they want it hear it too (the retry log's last line).
                hooks += instrument.wanting(self._failure_hooks[len(hooks) :], kind)
        if not hooks:  # nobody hears it (a quiet logger): no event made
            if self.start == NOT_YET:  # the clock read as the event would have
                self.elapsed()  # ... so that later events count from here
            return
        if not self._id:
            self._id = _PROCESS["new_call_id"]()
        # (the event made here as the tuple it is: instrument.event's call costs a fifth)
        event = _tuple_new(
            _RetryEvent,
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
        for hook in hooks:
            hook(event)

    def tell_error(self, error: BaseException, number: int, reason: str | None = None) -> None:
        """The call ends with *error* at attempt *number*: its hooks hear an
        ``"error"``, and after a retry those of retries and give-ups whose
        ``wants("error")`` says so (the retry log).  *reason*: None when the
        attempt ran; ``"refused"`` or ``"interrupted"`` when it never did."""
        if self._hooks or (number > 1 and self._failure_hooks):
            self.emit("error", error, number, reason=reason)

    def _give_up(self, attempt: Attempt | None, outcome: Any, reason: str) -> None:
        """The call stops retrying *outcome*: tell the give_up hook and the hooks."""
        self.reason = reason
        if self.policy.give_up is not None:
            try:
                self.policy.give_up(attempt, outcome)  # type: ignore[arg-type]
            except BaseException as error:  # the hook broke: the call ends with its error
                self._broken(error)
                raise
        if self._failure_hooks:
            self.emit("give_up", outcome, self.number, reason=reason)

    # -- the decision ---------------------------------------------------------------

    def decide(
        self, attempt: Attempt | None, exc: BaseException | None, result: Any, judged: bool = False
    ) -> float | None:
        """The outcome of the current attempt in, the sleep before the next out.

        *exc* is the attempt's exception (None if it returned); *result* its
        result when there is one (*judged*: one ``on_result`` rejected
        already).  None means the outcome stands: a success,
        a failure not to retry, or no room left to retry (the delays ran out,
        the deadline or a part say no, or the delay is too long to sleep).
        The caller then raises the exception or returns the result.
        """
        policy, plan = self.policy, self.plan
        self.state = _DONE  # unless a retry follows
        asked = False  # the parts' allow_retry was asked already
        if exc is not None:
            try:  # classes that are all Exceptions: one isinstance, here; else `on` is asked
                retried = (
                    isinstance(exc, policy.on)  # type: ignore[arg-type]
                    if policy.only_exceptions
                    else matches(policy.on, False, exc)
                )
            except BaseException as error:  # the predicate broke: the call ends with its error,
                self.end_on_error(error)  # as when on_result breaks (a breaker's probe comes back)
                raise
            if not retried:
                self.end_on_error(exc)
                return None
            outcome: Any = exc
        elif policy.on_result is not None and result is _NO_RESULT:
            misused = RuntimeError(
                "on_result was given, but the attempt handed over no"
                " result: call attempt.set_result(value) in the block"
            )
            self.stop(misused)
            raise misused
        elif policy.on_result is not None and (judged or self.rejects(result)):
            outcome = result
        else:
            self.succeeded(result)
            return None
        kind = FAILURE
        told = False  # the parts heard of the attempt
        try:  # what breaks from here ends the call: its hooks hear of it
            if self.in_async:  # is the task being cancelled?
                if self._task is not None:  # asyncio's requests, counted (3.11+)
                    self._cancelling = no_retry_if_cancelled(self._task, self._cancelling, exc)
                elif cancelled_under_trio():  # trio's scope
                    raise TrioCancelling  # (asettle raises trio's Cancelled in its place)
            if plan.tells:
                if policy.throttled is not None and policy.throttled(outcome):
                    kind = THROTTLE
                told = True
                self.tell_parts(outcome, kind, self.number)
            self.last = exc  # the failure retried (None for a result)
            # The schedule is made at the first failure, then drawn one delay per retry.
            delays = self._delays
            if delays is None:
                delays = self._delays = _checks.fresh_delays("delays", policy.factory)
                # a schedule per kind of failure (after a deadline's last sleep: none)
                self._pick = _no_room if self._final else getattr(delays, "next_for", None)
            pick = self._pick
            if pick is None:
                delay, reason = next(delays, _END), "exhausted"
            else:  # a schedule per kind of failure, or _no_room once _final
                delay, reason = pick(outcome, kind), "exhausted"
                if delay is _PICKED_END:
                    delay = _END
                elif delay.__class__ is Deferred:  # the parts first, then the jitter's draw
                    delay, reason, asked = self._deferred(delay, outcome, kind)
                    if delay.__class__ is Deferred:  # paid for: drawn here, asked set
                        delay = delay.draw()
            number = self.number
            if delay.__class__ is not float or not 0.0 <= delay <= ENDLESS_DELAY:
                if delay is not _END:  # checked: _END if infinite, a long one warned of
                    delay = self._unusual(delay, number)
            elif number > ENDLESS_RETRIES and policy.deadline is None and not policy.warned:
                self._warn_endless(delay)
            if not delay:  # -0.0 as 0.0 (a zero delay is common: no slower path for it)
                delay = 0.0
            if delay is not _END and (self.hint is not None or not plan.simple):
                delay, reason = self._limit(delay, outcome, kind, asked)
            if delay is _END and asked:  # paid for, but no retry: a jittered draw too long
                self._drop()  # to sleep, or the hint or the deadline leaves none
        except BaseException as error:  # the schedule, a delay, a callback or a part broke
            if error.__class__ is TrioCancelling:  # nothing asked or told yet: see asettle
                raise
            if not told and plan.tells:
                self._untold(error, outcome, kind)
            if asked:  # after the parts paid for the retry (a draw, a hook): it will not come
                self._drop()
            self._broken(error)
            raise
        if delay is _END:
            self.last = None
            self._give_up(attempt, outcome, "deadline" if self._final else reason)
            return None
        self.number = number + 1
        self.delay = delay
        self.state = _NEXT
        return delay

    def succeeded(self, result: Any) -> None:
        """The current attempt succeeded with *result* (``_NO_RESULT``: a
        loop's body handed over none), and no ``on_result`` judges it: the
        call is over.  Its parts hear of the success, then its hooks; a part
        that raises ends the call with its error, which the hooks hear
        instead.  (A loop's attempt tells it here at once, past ``settle``.)"""
        self.state = _DONE
        self.last = None  # the call is over: it keeps no failure (nor its frames)
        if result is _NO_RESULT:  # a loop body that returned handed over no result
            result = None
        plan = self.plan
        try:  # (a part that raises ends the call: its hooks hear that error)
            if self.took and plan.shares is not None:  # a part hears what it took
                self.tell_parts(result, SUCCESS, self.number)
            elif plan.afters:  # (nobody took anything: one call fewer; none for no part)
                tell_each(plan.afters, result, SUCCESS, self.number)
        except BaseException as error:
            self._broken(error)
            raise
        if self._hooks:
            self.emit("success", result, self.number)

    def _untold(self, error: BaseException, outcome: Any, kind: str) -> None:
        """The decision broke on *error* (``throttled`` raised) before the
        parts heard how the attempt went: it failed all the same, and they
        hear so - a breaker's probe comes back.  An interruption (no
        ``Exception``) is no answer: they hear nothing.  A part's error is
        dropped (*error* came first: it ends the call), but an interruption,
        which ends the call instead (its hooks hear it)."""
        if isinstance(error, Exception):
            try:
                self.tell_parts(outcome, kind, self.number)
            except Exception:  # (dropped: the first error is the one that propagates)
                pass
            except BaseException as interrupted:
                self._broken(interrupted)
                raise

    def _broken(self, error: BaseException) -> None:
        """The decision broke on *error* (``on``, the schedule, a delay, a
        callback, a part raised): the call ends with it, and its hooks hear
        of it as an ``"error"`` (a span begun at the first retry ends)."""
        self.last = None
        self.tell_error(error, self.number)

    def _deferred(self, delay: Deferred, outcome: Any, kind: str) -> tuple[Any, str, bool]:
        """(delay, reason, asked) for a jittered delay of ``per_failure``: the
        parts are asked before the jitter is drawn (the AWS SDKs' order), but
        only when a retry can follow - not for an infinite delay, nor past the
        deadline.  With attempt timeouts a draw that would leave the next
        attempt no time ends the call (see ``_limit``), so there the draw
        comes first, and a budget never pays for a retry that cannot come.
        Otherwise an allowed retry's *delay* comes back undrawn: the caller
        draws it where a draw that breaks gives the retry back."""
        deadline = self.policy.deadline
        if delay.ceiling == _INF:  # no next attempt, whatever the draw: nothing to ask
            return _END, "exhausted", False
        drawn = None
        if deadline is not None:
            left = deadline - self.elapsed()
            if left <= 0.0:
                return _END, "deadline", False
            if self.policy.timeout_part is not None:
                drawn = delay.draw()
                if self._leaves_no_time(drawn, left):
                    return _END, "deadline", False
        if not self._allowed(outcome, kind):
            self.refused = delay
            return _END, "budget", False
        return delay if drawn is None else drawn, "exhausted", True

    def _leaves_no_time(self, delay: float, remaining: float) -> bool:
        """Whether a sleep of *delay*, with *remaining* seconds to the deadline,
        leaves the attempt after it no time: its timeout (``attempt_timeout``,
        cut to the deadline) would end as it began - a timeout of 0, which a
        socket takes for "do not wait at all".  Then the call ends instead."""
        return delay >= remaining and self.policy.timeout_part is not None

    def _unusual(self, given: Any, number: int) -> float:
        """A delay that is not a float within [0, ENDLESS_DELAY] (nor _END):
        _END if infinite, a valid delay (a long one warned of), or the error
        naming it."""
        delay = _checks.wait("delays", given)
        if delay == _INF:
            return _END  # an infinite wait is no next attempt
        policy = self.policy
        if (
            (number > ENDLESS_RETRIES or delay > ENDLESS_DELAY)
            and policy.deadline is None
            and not policy.warned
        ):
            self._warn_endless(delay)
        return delay

    def _warn_endless(self, delay: float) -> None:
        """Warn once per policy about a schedule that looks endless: one that
        gave many delays (since it last started over) or a very long one."""
        retries = self.number - self._fresh_from  # (since a stream's schedule last started over)
        if retries <= ENDLESS_RETRIES and delay <= ENDLESS_DELAY:
            return  # a stream's schedule restarted after progress: not endless (yet)
        policy = self.policy
        policy.mark_warned()
        seen = f"{retries} retries" if retries > ENDLESS_RETRIES else f"a delay of {delay:g} s"
        warnings.warn(
            f"the retry policy {policy.name!r} has run {seen} with no deadline: its"
            " delays may never end.  Bound them: islice(delays, n) for at most n"
            " retries, within(delays, seconds) for a total sleep, or deadline=seconds",
            RuntimeWarning,
            stacklevel=_checks.outside_the_library(),
        )

    def _limit(self, delay: float, outcome: Any, kind: str, asked: bool) -> tuple[float, str]:
        """*delay* raised to the server's hint and fitted to the deadline and
        the parts (unless *asked* already); (_END, why) if they leave no room
        for a retry."""
        policy = self.policy
        final = False
        hint, self.hint = self.hint, None
        if policy.retry_after is not None:
            wanted = policy.retry_after(outcome)
            if wanted is not None:
                wanted = clamped(wanted, policy.retry_after_max, "retry_after")
                if hint is None or wanted > hint:
                    hint = wanted
        delay = raised(delay, hint, policy.retry_after_beyond)
        if hint is not None and hint > delay:
            hint = delay  # what is honoured of it
        if delay == _INF:
            return _END, "retry_after"  # a hint too long to sleep: no next attempt
        if policy.deadline is not None:
            remaining = policy.deadline - self.elapsed()
            if remaining <= 0 or (hint is not None and hint > remaining):
                return _END, "deadline"  # no room left, or not for the wait the server asked
            if self._leaves_no_time(delay, remaining):
                return _END, "deadline"
            if delay > remaining:  # shortened to end at the deadline: the last try
                delay, final = remaining, True
        if not asked and not self._allowed(outcome, kind):
            return _END, "budget"
        if final:  # no draw after this retry: the next decision gives up
            self._final, self._pick = True, _no_room
        return delay, ""

    def _allowed(self, outcome: Any, kind: str) -> bool:
        """May the call retry: every part's allow_retry says yes (what each
        took is the call's ``took``)?  Asked once per retry, last.  When one
        refuses, or raises, those asked before it give back what they took."""
        allows = self.plan.allows
        if not allows:
            return True
        each: list[float] = []  # what each took, kept to give back (see _drop)
        allowed = False
        try:
            for allow in allows:
                taken = allow(outcome, kind)
                if not taken:
                    return False
                try:
                    each.append(0.0 + taken)  # (True counts as 1.0)
                except OverflowError:  # an int beyond floats: as far as floats go
                    each.append(_INF)
                except TypeError:  # a Decimal, a Fraction: its float; no number: the part's bug
                    each.append(_checks.number(_TAKEN, taken, endless=True))
            allowed = True
        finally:
            self._took = tuple(each)
            if not allowed:  # refused, or a part broke: those before it give back
                self._drop()
        self._earlier, self.took = self.took, self._took
        return True

    def tell_parts(self, outcome: Any, kind: str, number: int) -> None:
        """Tell the parts how attempt *number* went: its *outcome*, of *kind*,
        and each what its own allow_retry took for the call's last retry
        (``Part.after_attempt``)."""
        plan, took = self.plan, self.took
        shares = plan.shares
        if took and shares is not None:
            spents = tuple([0.0 if share is None else took[share] for share in shares])
            tell_each(plan.afters, outcome, kind, number, spents)
        else:
            tell_each(plan.afters, outcome, kind, number)
