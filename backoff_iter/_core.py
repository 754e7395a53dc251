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
  loops; ``@retry``, ``RetryTransport`` and hedging run in them too, and
  the overload simulator drives :meth:`Call.admit` and :meth:`Call.decide`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, cast

from . import _checks, _sleeping, instrument
from ._attempt import _DONE, _NEXT, _NO_RESULT, _READY, _RUNNING, Attempt
from ._cancelling import cancellations, no_retry_if_cancelled
from ._filters import matches
from ._options import Policy
from ._sliding import NOT_YET, steady
from .hints import server_wait, sleep_for
from .parts import ERROR, FAILURE, SUCCESS, THROTTLE
from .schedules import END as _PICKED_END
from .schedules import Deferred

__all__ = ["Call", "begin"]

_END: float = cast(float, object())  # no next attempt (compared by identity)
_INF = math.inf
_LONGEST = _checks.LONGEST  # the longest delay a sleep takes
_UNASKED = object()  # a call's failure hooks not yet asked what they want

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
    return Call(policy, policy.clock(), in_async, shown=shown)


class Call:
    """One run of a policy: the iterator of its attempts, and every decision.

    What a part reads of it (:meth:`~backoff_iter.Part.before_attempt`):
    ``number``, ``last``, ``policy``, ``elapsed()``, and ``timeout``.
    """

    # A call that succeeds at once only sets what __init__ sets: the rest
    # starts from these class defaults.
    number: int = 1  # of the current attempt, or the next one to run
    delay: float = 0.0  # slept before the current attempt
    slept: float = 0.0  # slept in all, so far
    spent: float = 0.0  # what the parts' allow_retry took for this call's last retry
    last: BaseException | None = None  # the latest failure retried
    hint: float | None = None  # from attempt.retry_after()
    timeout: float | None = None  # of the next attempt, set by a part
    timeouts: Iterator[Any] | None = None  # the attempt timeouts' schedule, for its part
    timeout_last: float = _INF  # ... and its latest value
    in_async: bool = False  # an async loop
    _delays: Iterator[float] | None = None  # made at the first failure
    _pick: Callable[[Any, str], Any] | None = None  # ... its next_for, if per kind of failure
    reason: str | None = None  # why the call gave up, once it did ("exhausted", "budget"...)
    refused: Any = None  # a delay whose jitter a part's refusal left undrawn (per_failure)
    _final: bool = False  # the deadline shortened the last sleep
    _task: Any = None  # the asyncio task of an async call (3.11+) ...
    _cancelling: int = 0  # ... and its pending cancellations when the call began
    _id: int = 0  # for the hooks' events, given at the first one
    _wanted: Any = _UNASKED  # instrument.gate of the failure hooks, made at the first retry
    _retries_heard: bool = True  # False: no hook wanted the first retry, nor so the rest
    _stamp: bool = False  # attempts tell their elapsed time (0.0 when nobody reads it)
    quiet: bool = False  # a success is the end: no part or hook to tell
    state: int = _NEXT  # where the loop is (see _attempt.py)
    _hooks: tuple[instrument.Hook, ...] = ()  # told of every event
    _failure_hooks: tuple[instrument.Hook, ...] = ()  # told of retries and give-ups
    policy: Policy
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
        # The first steady reading of the clock starts the call; None: nobody
        # read it when the first attempt began, so the first reading will.
        if start is None:
            self.start = self._time = NOT_YET
        elif policy.steady_clock:
            self.start = self._time = start
        else:
            self.start = self._time = steady(start, NOT_YET)
        if in_async:
            self.in_async = True
            self._task, self._cancelling = cancelling or cancellations()
        # The hooks that see this call's events: its policy's and the process's
        # (none for a simulated client: process_hooks False); those of the
        # process that want only retries and give-ups hear only those.
        if process_hooks:
            every, failures = instrument.every, instrument.failures
        else:
            every = failures = ()
        hooks = policy.observe + every if every else policy.observe
        if hooks:
            self._hooks = hooks
            self._failure_hooks = hooks + failures
        else:  # nobody hears a success: quiet if the policy has nothing to tell either
            self.quiet = policy.quiet
            self._failure_hooks = failures
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
                try:
                    for before, is_async in self.policy.abefores:
                        if is_async:
                            await before(self)
                        else:
                            before(self)
                except Exception as refused:
                    self._refused(refused)
                    raise
            return self._attempt()
        raise self._over(StopAsyncIteration)

    def _attempt(self) -> Attempt:
        """The attempt that may run now, handed out to be entered."""
        self.state = _READY
        self.last = None  # the parts have seen it: hold no failure (nor its frames) any longer
        number = self.number
        elapsed = self.elapsed() if number > 1 and self._stamp else 0.0
        return Attempt(self, number, self.delay, elapsed, self.timeout)

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
        try:
            for before in self.policy.befores:
                waited += before(self)
        except Exception as refused:
            self._refused(refused)
            raise
        return waited

    def _refused(self, refused: Exception) -> None:
        """A part refused the next attempt: the call ends with its error, which
        keeps the failure that led to it (the call's last, if it retried one)."""
        self.state = _DONE
        if self.last is not None:  # the call's own failure before the one the part tells
            refused.__cause__ = self.last
        self.last = None  # the call is over: it keeps no failure (nor its frames)
        if self._hooks:
            self.emit("error", refused, self.number)

    def misuse(self, attempt: Attempt, statement: str) -> None:
        """Raise the error that says how an Attempt was misused."""
        if self.in_async != (statement == "async with"):
            right = "async with" if self.in_async else "with"
            raise TypeError(f"use `{right} attempt:` with this loop, not `{statement}`")
        raise RuntimeError(
            f"{attempt!r} is not the current attempt of a running retry loop:"
            " use each attempt once, in its own iteration"
        )

    def elapsed(self) -> float:
        """Seconds since the first attempt began, per the policy's clock.  A
        reading that goes back, or is not finite, counts as no time passed."""
        policy = self.policy
        now = policy.clock()
        if not policy.steady_clock:
            now = steady(now, self._time)
        self._time = now
        if self.start == NOT_YET:  # the first good reading: the call starts now
            self.start = now
        return now - self.start if now > NOT_YET else 0.0

    # -- after each attempt: decide, then wait ------------------------------------

    def settle(self, attempt: Attempt | None, exc: BaseException | None, result: Any) -> bool:
        """The sync loop's step: decide on the outcome; True when the call
        retries (it has slept), False when the outcome stands."""
        if attempt is None and self.policy.observed:  # @retry's first try, for the hooks
            attempt = Attempt(self, 1, 0.0, 0.0)
        delay = self.decide(attempt, exc, result)
        if delay is None:
            return False
        outcome = result if exc is None else exc
        hook = self.policy.before_sleep
        if hook is not None:
            returned = hook(cast(Attempt, attempt), outcome, delay)
            if returned is not None:
                _sleeping.refuse_awaitable(returned, hook, "before_sleep")
            delay = self._fit(attempt, outcome, delay)
            if delay is None:
                return False
        if self._failure_hooks and self._retries_heard:
            self.emit("retry", outcome, self.number - 1, delay)
        _sleeping.sleep(self.policy.sleep, delay)
        self.slept += delay
        return True

    async def asettle(
        self, attempt: Attempt | None, exc: BaseException | None, result: Any
    ) -> bool:
        """The async loop's step: :meth:`settle`, awaiting an async hook and sleep."""
        if attempt is None and self.policy.observed:  # @retry's first try, for the hooks
            attempt = Attempt(self, 1, 0.0, 0.0)
        delay = self.decide(attempt, exc, result)
        if delay is None:
            return False
        outcome = result if exc is None else exc
        hook = self.policy.before_sleep
        if hook is not None:
            returned = hook(cast(Attempt, attempt), outcome, delay)
            if returned is not None and hasattr(returned, "__await__"):
                await cast("Awaitable[Any]", returned)
            delay = self._fit(attempt, outcome, delay)
            if delay is None:
                return False
        if self._failure_hooks and self._retries_heard:
            self.emit("retry", outcome, self.number - 1, delay)
        await _sleeping.asleep(self.policy.sleep, delay)
        self.slept += delay
        return True

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
        if matches(policy.on, policy.only_exceptions, failure):
            kind = (
                THROTTLE if policy.throttled is not None and policy.throttled(failure) else FAILURE
            )
            for after in policy.afters:
                after(failure, kind, self.number, self.spent)
            self._give_up(attempt, failure, "committed")
        else:  # a failure no policy retries: an error, as for any call
            for after in policy.afters:
                after(failure, ERROR, self.number, self.spent)
            if self._hooks:
                self.emit("error", failure, self.number)

    def abandon(self) -> None:
        """The consumer ended a stream (closed it, or threw in what ended it):
        no retry, and nothing to tell."""
        self.state = _DONE
        self.last = None

    def restart_schedule(self) -> None:
        """The next retry draws the first delay of a fresh schedule: a stream
        that delivered items since its last failure has recovered."""
        self._delays = None

    def stop(self, exc: BaseException) -> bool:
        """End the call on *exc* without a decision (the caller's own bug)."""
        self.state = _DONE
        if self._hooks:
            self.emit("error", exc, self.number)
        return False

    def _fit(self, attempt: Attempt | None, outcome: Any, delay: float) -> float | None:
        """*delay*, shortened so the sleep still ends by the deadline after a
        before_sleep hook took its time; None (the call gives up) when the
        hook ran past the deadline: no attempt starts past it."""
        deadline = self.policy.deadline
        if deadline is not None:
            remaining = deadline - self.elapsed()
            if remaining <= 0.0:
                self.number -= 1
                self.state = _DONE
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
        of a success or an error, those of retries too of a retry or give-up."""
        if kind == "retry" or kind == "give_up":
            hooks = self._failure_hooks
            wanted = self._wanted
            if wanted is _UNASKED:
                wanted = self._wanted = instrument.gate(hooks)
            if wanted is not None and not wanted(kind):
                if kind == "retry":  # a quiet logger: asked once per call, not per retry
                    self._retries_heard = False
                if self.start == NOT_YET:  # the clock read as the event would have
                    self.elapsed()  # ... so that later events count from here
                return  # no hook wants it (a quiet logger): no event made
        else:
            hooks = self._hooks
        if not self._id:
            self._id = instrument.new_call_id()
        event = instrument.event(
            kind,
            self.policy.name,
            number,
            outcome,
            delay,
            self.slept,
            self.elapsed(),
            reason,
            self._id,
        )
        for hook in hooks:
            hook(event)

    def _give_up(self, attempt: Attempt | None, outcome: Any, reason: str) -> None:
        """The call stops retrying *outcome*: tell the give_up hook and the hooks."""
        self.reason = reason
        if self.policy.give_up is not None:
            self.policy.give_up(attempt, outcome)  # type: ignore[arg-type]
        if self._failure_hooks:
            self.emit("give_up", outcome, self.number, reason=reason)

    # -- the decision ---------------------------------------------------------------

    def decide(
        self, attempt: Attempt | None, exc: BaseException | None, result: Any
    ) -> float | None:
        """The outcome of the current attempt in, the sleep before the next out.

        *exc* is the attempt's exception (None if it returned); *result* its
        result when there is one.  None means the outcome stands: a success,
        a failure not to retry, or no room left to retry (the delays ran out,
        the deadline or a part say no, or the delay is too long to sleep).
        The caller then raises the exception or returns the result.
        """
        policy = self.policy
        self.state = _DONE  # unless a retry follows
        asked = False  # the parts' allow_retry was asked already
        if exc is not None:
            if not matches(policy.on, policy.only_exceptions, exc):
                self.last = None  # the call is over: it keeps no failure (nor its frames)
                for after in policy.afters:
                    after(exc, ERROR, self.number, self.spent)
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
            self.last = None  # the call is over: it keeps no failure (nor its frames)
            for after in policy.afters:
                after(result, SUCCESS, self.number, self.spent)
            if self._hooks:  # a loop body that returned handed over no result
                self.emit("success", None if result is _NO_RESULT else result, self.number)
            return None
        if self._task is not None:  # an async call (3.11+): is the task being cancelled?
            self._cancelling = no_retry_if_cancelled(self._task, self._cancelling, exc)
        kind = FAILURE
        if policy.tells:  # a throttle, or parts to tell (else a plain failure)
            if policy.throttled is not None and policy.throttled(outcome):
                kind = THROTTLE
            for after in policy.afters:
                after(outcome, kind, self.number, self.spent)
        self.last = exc  # the failure retried (None for a result)
        # The schedule is made at the first failure, then drawn one delay per retry.
        delays = self._delays
        if delays is None:
            delays = self._delays = _checks.fresh_delays("delays", policy.factory)
            self._pick = getattr(delays, "next_for", None)  # a schedule per kind of failure
        if self._final:  # the deadline shortened the last sleep: no room for another
            delay, reason = _END, "deadline"
        elif self._pick is None:
            delay, reason = next(delays, _END), "exhausted"
        else:
            delay, reason = self._pick(outcome, kind), "exhausted"
            if delay is _PICKED_END:
                delay = _END
            elif delay.__class__ is Deferred:  # the parts first, then the jitter's draw
                if self._allowed(outcome, kind):
                    delay, asked = delay.draw(), True
                else:
                    self.refused = delay
                    delay, reason = _END, "budget"
        if delay.__class__ is not float or not 0.0 <= delay <= _LONGEST:
            delay = _END if delay is _END else _checks.wait("delays", delay)
            if delay == _INF:
                delay = _END  # an infinite wait is no next attempt
        if delay is not _END:
            if (
                (self.number > ENDLESS_RETRIES or delay > ENDLESS_DELAY)
                and policy.deadline is None
                and not policy.warned
            ):
                self._warn_endless(delay)
            if self.hint is not None or not policy.simple:
                delay, reason = self._limit(delay, outcome, kind, asked)
        if delay is _END:
            self.last = None
            self._give_up(attempt, outcome, reason)
            return None
        self.number += 1
        self.delay = delay
        self.state = _NEXT
        return delay

    def _warn_endless(self, delay: float) -> None:
        """Warn once per policy about a schedule that looks endless."""
        policy = self.policy
        policy.__dict__["warned"] = True
        seen = (
            f"{self.number} retries" if self.number > ENDLESS_RETRIES else f"a delay of {delay:g} s"
        )
        warnings.warn(
            f"the retry policy {policy.name!r} has run {seen} with no deadline: its"
            " delays may never end.  Bound them: islice(delays, n) for at most n"
            " retries, within(delays, seconds) for a total sleep, or deadline=seconds",
            RuntimeWarning,
            stacklevel=2,
        )

    def _limit(self, delay: float, outcome: Any, kind: str, asked: bool) -> tuple[float, str]:
        """*delay* raised to the server's hint and fitted to the deadline and
        the parts (unless *asked* already); (_END, why) if they leave no room
        for a retry."""
        policy = self.policy
        hint, self.hint = self.hint, None
        if policy.retry_after is not None:
            wanted = policy.retry_after(outcome)
            if wanted is not None:
                wanted = server_wait(wanted, policy.retry_after_max)
                if hint is None or wanted > hint:
                    hint = wanted
        delay = sleep_for(delay, hint, policy.retry_after_beyond)
        if hint is not None and hint > delay:
            hint = delay  # what is honoured of it
        if delay == _INF:
            return _END, "retry_after"  # a hint too long to sleep: no next attempt
        if policy.deadline is not None:
            remaining = policy.deadline - self.elapsed()
            if remaining <= 0 or (hint is not None and hint > remaining):
                return _END, "deadline"  # no room left, or not for the wait the server asked
            if delay > remaining:  # shortened to end at the deadline: the last try
                delay = remaining
                self._final = True
        if not asked and not self._allowed(outcome, kind):
            return _END, "budget"
        return delay, ""

    def _allowed(self, outcome: Any, kind: str) -> bool:
        """May the call retry: every part's allow_retry says yes (what they
        took is the call's ``spent``)?  Asked once per retry, last."""
        allows = self.policy.allows
        if not allows:
            return True
        took = 0.0
        for allow in allows:
            taken = allow(outcome, kind)
            if not taken:
                return False
            took += taken
        self.spent = took
        return True
