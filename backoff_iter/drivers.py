"""Retry drivers over any iterable of delays: ``retrying``, ``aretrying``, ``@retry``.

Every form runs on the core in :mod:`backoff_iter._core`: a policy (the
options, :class:`~backoff_iter.RetryOptions`, checked once) and, per call,
an iterator of attempts whose ``with attempt:`` block decides what the
outcome means.  ``@retry`` is that same loop around the decorated function::

    for attempt in begin(policy):
        with attempt:
            result = attempt.set_result(func(*args, **kwargs))
    return result

with one shortcut: when at most a breaker's or a throttle's check guards
the first try (no other part asked before an attempt, and no timeout; a
CUBIC rate limiter only while it is off, when it lets every request go), it
runs bare - ``on_result`` judges its result, and a success is told to the
parts and the hooks as the loop would tell them - and the loop starts only
if it fails or its result is rejected.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Sequence,
)
from typing import TYPE_CHECKING, Any, TypeVar, cast, overload

from . import _checks, instrument
from ._attempt import _NO_RESULT, Attempt
from ._cancelling import cancellations
from ._core import (
    _PROCESS,
    Call,
    begin,
    dropped,
    hooks_now,
    rejected,
    success_teller,
    tell_broken,
    tell_refused,
)
from ._options import Policy, SyncPolicy, reusable
from .parts import SUCCESS, succeeded

if TYPE_CHECKING:
    from typing import Protocol

    from typing_extensions import ParamSpec, Unpack

    from ._options import DecoratorOptions

    P = ParamSpec("P")
    Q = ParamSpec("Q")
    S = TypeVar("S")
    Numbers = TypeVar("Numbers", bound=Iterable[float], covariant=True)

    class FunctionOrDelays(Protocol[Numbers]):
        """What type checkers see ``@retry`` make of a function of no arguments
        returning numbers: the function retried (called with nothing), which
        also serves as the delays of ``@retry(func)`` over another function
        (called with one function), as the runtime's ``_either_role`` does."""

        @overload
        def __call__(self) -> Numbers: ...

        @overload
        def __call__(self, func: Callable[Q, S], /) -> Callable[Q, S]: ...


__all__ = ["Attempt", "ExceptionsAsDelays", "aretrying", "retry", "retrying"]

R = TypeVar("R")


class retrying(SyncPolicy, Iterable[Attempt]):
    """A retry policy for ``for`` loops: it yields attempts to run in ``with`` blocks.

    >>> from itertools import islice
    >>> from backoff_iter import exponential
    >>> calls, slept = [], []
    >>> def fetch():
    ...     calls.append(1)
    ...     if len(calls) < 3:
    ...         raise OSError("flaky")
    ...     return "data"
    >>> def get():
    ...     for attempt in retrying(lambda: islice(exponential(0.1), 4), on=OSError,
    ...                             sleep=slept.append):
    ...         with attempt:
    ...             return fetch()
    >>> get(), slept
    ('data', [0.1, 0.2])

    ``retrying(delays=None, **options)``: *options* are the keyword options
    of every driver, :class:`~backoff_iter.RetryOptions` (``on``,
    ``on_result``, ``deadline``, ``budget``, ``sleep``, hooks, parts...).

    *delays* is a zero-argument function returning fresh delays (made only
    after a first failure), or a list or tuple: such a policy is reusable,
    every ``for`` over it starts afresh.  A one-shot iterable (a strategy,
    a generator) serves one loop; iterating the policy again raises
    ``RuntimeError``.  Omitted, the default schedule: up to 9 retries of
    smooth jitter from 0.1 s capped at 5 s, within 45 s of sleep
    (:func:`backoff_iter.default_delays`).

    By default only transient failures are retried
    (:func:`~backoff_iter.is_transient`: connection errors, timeouts, HTTP
    transport errors); any other exception propagates from the ``with``
    block at once.  When the delays, the deadline or a part leave no room,
    or a delay is infinite, the last failure propagates from the ``with``
    block as itself, with its traceback.  Success ends the loop; it never
    sleeps after the last attempt.
    """

    __slots__ = ()

    if TYPE_CHECKING:

        def __iter__(self) -> Iterator[Attempt]: ...

    else:  # begin(policy) itself, as the method: a loop's first step calls no more
        __iter__ = begin


class aretrying(Policy, AsyncIterable[Attempt]):
    """:class:`retrying` for ``async for`` and ``async with``, under asyncio or trio.

    *sleep* defaults to the running event loop's sleep (``asyncio.sleep``
    or ``trio.sleep``, found as anyio and httpx find them); a plain function
    is called and its result awaited only if it is awaitable.  An async
    *before_sleep* is awaited.  Cancellation is never swallowed, and no
    retry starts once the task has been asked to cancel since the loop began
    (asyncio counts the requests from Python 3.11: before, an attempt that
    turns the cancellation into an ordinary error is decided as that error).

    >>> import asyncio
    >>> async def main():
    ...     slept = []
    ...     async for attempt in aretrying([0.5, 1.0], on=ValueError, sleep=slept.append):
    ...         async with attempt:
    ...             if attempt.number < 3:
    ...                 raise ValueError(attempt.number)
    ...             return attempt.number, slept
    >>> asyncio.run(main())
    (3, [0.5, 1.0])
    """

    __slots__ = ()

    def __aiter__(self) -> AsyncIterator[Attempt]:
        return begin(self, in_async=True)


class ExceptionsAsDelays:
    """What type checkers see ``@retry(SomeError)`` return: no decorator.

    An exception class (or a tuple of them) where the delays go is a
    mistake - ``@retry(on=SomeError)`` was meant - and ``retry`` raises
    ``ArgumentTypeError`` at once; this type makes a type checker reject
    the decoration too ("object of type ExceptionsAsDelays is not callable").
    """

    __slots__ = ()


@overload
def retry(  # an exception class where the delays go: `on=` was meant
    schedule: type[BaseException] | tuple[type[BaseException], ...],
    /,
    **options: Unpack[DecoratorOptions],
) -> ExceptionsAsDelays: ...


@overload
def retry(  # bare, over a function of no arguments returning numbers: it may be either
    func: Callable[[], Numbers], /
) -> FunctionOrDelays[Numbers]: ...


@overload
def retry(  # a delays factory is a function too: this overload comes before the bare one
    schedule: Callable[[], Iterable[float]] | Sequence[float] | None = None,
    /,
    **options: Unpack[DecoratorOptions],
) -> Callable[[Callable[P, R]], Callable[P, R]]: ...


@overload
def retry(func: Callable[P, R], /) -> Callable[P, R]: ...


def retry(schedule: Any = None, /, **options: Any) -> Any:
    """Decorate a sync or async function so its transient failures are retried.

    *schedule*, the delays, is a zero-argument function returning fresh
    delays for each call (made only once a call has failed), or a list or
    tuple; omitted, the default schedule of :class:`retrying`.  It may also
    be given by name, ``delays=``.  *options* are those of every driver
    (:class:`~backoff_iter.RetryOptions`), and the decorator's own
    (:class:`~backoff_iter.DecoratorOptions`: ``delays``, ``timeout_arg``,
    ``resume``); the decorated function keeps its signature, and with
    *on_result* its last result is returned when the retries run out.

    >>> from itertools import islice
    >>> from backoff_iter import exponential
    >>> slept = []
    >>> @retry(lambda: islice(exponential(0.1, cap=5), 5), on=TimeoutError,
    ...        sleep=slept.append)
    ... def ping(results=iter([TimeoutError(), TimeoutError(), "pong"])):
    ...     result = next(results)
    ...     if isinstance(result, Exception):
    ...         raise result
    ...     return result
    >>> ping(), slept
    ('pong', [0.1, 0.2])

    A bare ``@retry`` decorates with every default: the default schedule,
    retrying only transient failures (:func:`~backoff_iter.is_transient`),
    each retry logged at WARNING.  An exception class where the delays go
    is refused - ``on=`` was meant:

    >>> retry(ConnectionError)
    Traceback (most recent call last):
    ...
    backoff_iter.ArgumentTypeError: delays must be delays (a list of seconds, or a function returning them), got the exception class ConnectionError: on=ConnectionError was probably meant, as in @retry(on=ConnectionError)

    Async functions (and objects whose ``__call__`` is async) are detected
    and sleep with the running event loop's sleep unless *sleep* is given.

    A generator function (sync or async) is retried as a stream: a failure
    before its first item is retried like a call's; one after items were
    delivered propagates as it is (no item repeated, none dropped), unless
    ``resume=`` says how to go on from where the consumer is.  A generator
    function given first and alone is always the function decorated; a
    schedule written as a generator function is passed as ``delays=``.

    >>> @retry([0.0], on=ConnectionError)
    ... def numbers(replies=iter(["cut", "ok"])):
    ...     if next(replies) == "cut":
    ...         raise ConnectionError("cut before the first item")
    ...     yield from range(3)
    >>> list(numbers())
    [0, 1, 2]
    """
    delays = schedule
    if "delays" in options:
        if delays is not None:
            raise _checks.ArgumentTypeError(
                "delays", "delays was given twice: first, and as delays="
            )
        delays = options.pop("delays")
    elif not options and _decorated_bare(delays):  # @retry without parentheses
        func = delays
        strategy = _strategy_named(func)
        if strategy is not None:
            raise _checks.ArgumentTypeError(
                "delays",
                f"@retry({strategy}) given alone would retry {strategy} itself; a"
                f" strategy is delays: give a function making a bounded run of them,"
                f" as in @retry(lambda: islice({strategy}(0.1), 5))",
            )
        decorated = _decorate(None, options, func)
        if _checks.is_async(func) or _is_generator(func) or not _takes_no_arguments(func):
            return decorated
        # A function of no arguments may also be the delays of `@retry(func)`
        # over another function: serve both.
        return _either_role(decorated, functools.partial(_decorate, func, options))
    resume = options.pop("resume", None)
    _checks.optional_callback("resume", resume, ("state",), awaited=True)  # (an async generator)
    timeout_arg = options.pop("timeout_arg", None)
    if timeout_arg is not None:
        if not isinstance(timeout_arg, str) or not timeout_arg.isidentifier():
            raise _checks.ArgumentTypeError(
                "timeout_arg",
                f"timeout_arg must name a keyword argument, got {_checks.shown(timeout_arg)}",
            )
        if options.get("attempt_timeout") is None:
            raise _checks.ArgumentValueError(
                "timeout_arg", "timeout_arg passes attempt_timeout: give attempt_timeout too"
            )
    if delays is not None:
        _checks.reusable_delays("delays", delays)
    attempt_timeout = options.get("attempt_timeout")
    if attempt_timeout is not None and not _checks.is_real(attempt_timeout):
        _checks.reusable_delays("attempt_timeout", attempt_timeout)
    options = reusable(options)  # a decorator makes a policy per function
    Policy(delays, **options)  # checked now
    if timeout_arg is not None:
        options["timeout_arg"] = timeout_arg
    if resume is not None:
        options["resume"] = resume
    return _decorator(delays, options)


def _decorator(delays: Any, options: dict[str, Any]) -> Callable[..., Any]:
    """What ``retry(delays, **options)`` returns: the decorator, which takes the
    one function to retry (``retry(fetch, on=...)()`` took *fetch* for the
    delays, and is told so)."""

    def decorator(*funcs: Any) -> Any:
        if len(funcs) != 1:
            got = f"{len(funcs)} arguments" if funcs else "nothing"
            raise _checks.ArgumentTypeError("func", _not_decorated(got))
        return _decorate(delays, options, funcs[0])

    return decorator


def _not_decorated(got: str) -> str:
    """Why the decorator that ``retry(...)`` made refuses what it was given."""
    return (
        f"func must be the function to retry, got {got}: retry(...) makes a decorator,"
        " as in @retry(...) above a def or retry(delays, on=...)(fetch), whose first"
        " argument is the delays"
    )


def _strategy_named(func: object) -> str | None:
    """The name of the library's strategy *func* is (or a partial of one
    is), else None: given alone to ``@retry``, a strategy is a mistake."""
    if isinstance(func, functools.partial):
        func = func.func
    module = sys.modules.get("backoff_iter.strategies")  # loaded if func is one
    if module is None or getattr(func, "__module__", None) != module.__name__:
        return None
    strategies: dict[str, object] = module.STRATEGIES
    for name, strategy in strategies.items():
        if strategy is func:
            return name
    return None


def _decorate(delays: Any, options: dict[str, Any], func: Callable[P, R]) -> Callable[P, R]:
    """*func* retried by a policy of *delays* and *options* (named after *func*
    unless *options* name it): the sync or the async loop around it."""
    if isinstance(func, (staticmethod, classmethod, property)):  # @retry above it
        kind = type(func).__name__
        why = " (a function wrapping it is handed the instance)" if kind == "staticmethod" else ""
        raise _checks.ArgumentTypeError(
            "func",
            f"func must be a function, got the {kind} {_checks.shown(func)}: put @retry"
            f" below @{kind}, next to the def{why}",
        )
    if not callable(func):
        raise _checks.ArgumentTypeError("func", _not_decorated(_checks.shown(func)))
    options = dict(options)
    timeout_arg = options.pop("timeout_arg", None)
    resume = options.pop("resume", None)
    if timeout_arg is not None:
        _check_accepts(func, timeout_arg)
    options.setdefault("name", _qualified_name(func))
    policy = Policy(delays, **options)
    stream = _is_generator(func)
    sync = stream == "sync" or (not stream and not _checks.is_async(func))
    if sync and policy.attempt_timeout is not None and timeout_arg is None:
        raise _checks.ArgumentValueError(
            "attempt_timeout",
            f"attempt_timeout cannot interrupt the sync function {_qualified_name(func)}:"
            " pass each attempt's timeout to it with timeout_arg= (timeout_arg='timeout'"
            " for requests.get(..., timeout=...)), or make it async",
        )
    if sync:  # an async sleep or before_sleep: refused now, not at the first retry
        for option in ("sleep", "before_sleep"):
            given = getattr(policy, option)
            if given is not None and _checks.is_async(given):
                raise _checks.ArgumentTypeError(
                    option,
                    f"{option} must be a plain function for the sync function"
                    f" {_qualified_name(func)}, got the async function {_checks.shown(given)},"
                    " which it cannot await: pass a plain one, or make the function async",
                )
    if stream:
        from . import _streams  # only for streams

        if policy.on_result is not None:
            raise _checks.ArgumentTypeError(
                "on_result",
                f"on_result does not apply to the generator function {func!r}: a stream"
                " succeeds when it ends; retry on its items in the consumer instead",
            )
        if stream == "async":
            return cast("Callable[P, R]", _streams.async_stream(policy, func, resume, timeout_arg))  # type: ignore[arg-type]
        return cast("Callable[P, R]", _streams.sync_stream(policy, func, resume, timeout_arg))  # type: ignore[arg-type]
    if resume is not None:
        raise _checks.ArgumentTypeError(
            "resume", f"resume applies to generator functions only, not to {func!r}"
        )
    if not sync:  # (no stream here: an async function, as found above)
        coroutine_function = cast("Callable[P, Awaitable[R]]", func)
        return cast("Callable[P, R]", _async_wrapper(policy, coroutine_function, timeout_arg))
    # A plain decorator below @retry may hide an async def: its awaitables are refused.
    return _sync_wrapper(policy, func, timeout_arg, _checks.is_async(_unwrapped(func)))


def _unwrapped(func: object) -> object:
    """*func* without the decorators that say what they wrap (``__wrapped__``,
    as ``functools.wraps`` sets it), or *func* itself if they loop."""
    import inspect  # only when decorating: it is slow to import

    try:
        return inspect.unwrap(func)  # type: ignore[arg-type]
    except ValueError:  # a cycle of __wrapped__
        return func


def _awaitable_refused(func: object, result: object) -> TypeError | None:
    """The error ending a call of *func*, a plain function wrapping an async
    one, that returned the awaitable *result* (closed, if a coroutine): its
    caller would await it after the retries, and what it raises there would
    never be retried (``@retry`` above a decorator that is not async itself,
    over an ``async def``).  None for any other result: a wrapper that runs
    the coroutine itself (``asyncio.run``) returns what it gave, which passes."""
    if not _checks.unawaited(result):
        return None
    return TypeError(
        f"{_qualified_name(func)} returned {_checks.shown(result)}, which @retry cannot"
        " retry: the function it decorates is a plain one around an async def (a decorator"
        " below @retry that is not async), so what the awaitable raises comes after the"
        " retries. Put @retry right above the async def, or make the decorator below it async"
    )


def _is_generator(func: object) -> str:
    """``"sync"`` or ``"async"`` for a generator function (a partial of one
    too, or an object whose __call__ is one), ``""`` for anything else."""
    import inspect  # only when decorating: it is slow to import

    while isinstance(func, functools.partial):  # (inspect unwraps a partial of a function only)
        func = func.func
    method = getattr(type(func), "__call__", None)  # noqa: B004 - the method itself is asked
    for candidate in (func, method):
        if inspect.isasyncgenfunction(candidate):
            return "async"
        if inspect.isgeneratorfunction(candidate):
            return "sync"
    return ""


def _check_accepts(func: Callable[..., Any], keyword: str) -> None:
    """Refuse at decoration a function that cannot take *keyword* (timeout_arg)."""
    import inspect

    try:
        parameters = inspect.signature(func).parameters
    except (TypeError, ValueError):  # no signature to read: let the call tell
        return
    accepts = keyword in parameters and parameters[keyword].kind in (
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.KEYWORD_ONLY,
    )
    if not accepts and not any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    ):
        raise _checks.ArgumentTypeError(
            "timeout_arg",
            f"timeout_arg={keyword!r}, but {func!r} has no keyword parameter {keyword!r}"
            " to take each attempt's timeout",
        )


def _qualified_name(func: object) -> str:
    """What telemetry calls *func*: its module and qualified name."""
    name = getattr(func, "__qualname__", None) or getattr(type(func), "__qualname__", "call")
    module = getattr(func, "__module__", None)
    return f"{module}.{name}" if module and module != "__main__" else str(name)


def _takes_no_arguments(func: object) -> bool:
    """A callable whose signature has no parameter at all."""
    import inspect

    try:
        return not inspect.signature(func).parameters  # type: ignore[arg-type]
    except (TypeError, ValueError):  # a builtin without a signature
        return False


def _decorated_bare(delays: object) -> bool:
    """``@retry`` without parentheses: *delays* is the function to decorate.

    Lists, tuples, iterators and exception classes are delays (the last
    refused); a callable is the decorated function (one of no arguments
    serves as delays too: :func:`_either_role`), and so is a staticmethod,
    classmethod or property (refused: ``@retry`` belongs below it).
    """
    return isinstance(delays, (staticmethod, classmethod, property)) or (  # refused then
        callable(delays)
        and not isinstance(delays, (Iterator, list, tuple))
        and not (isinstance(delays, type) and issubclass(delays, BaseException))
    )


def _either_role(
    decorated: Callable[..., Any], as_delays: Callable[[Callable[..., Any]], Any]
) -> Callable[..., Any]:
    """The retried function of no arguments, which still serves as the delays
    of ``@retry(func)``: called with one function, it decorates that."""

    @functools.wraps(decorated)
    def either(*args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and callable(args[0]):  # never a call of func itself
            return as_delays(args[0])
        return decorated(*args, **kwargs)

    return either


def _sync_wrapper(
    policy: Policy,
    func: Callable[P, R],
    timeout_arg: str | None = None,
    hides_async: bool = False,
) -> Callable[P, R]:
    """*func* retried by *policy*.  *hides_async*: *func* wraps an async
    function, and a call that returns an awaitable ends with a TypeError, as
    an error the parts and hooks hear (never the bare first try's success)."""
    plan, clock, on_result = policy.plan, policy.clock, policy.on_result
    timed, afters, successes = plan.timed, plan.afters, plan.successes
    fast = plan.fast and not hides_async
    # (limiter, a CubicRateLimiter itself, is read by its slot, not its enabled
    # property: the property's call costs more than all the rest of the test)
    checks, limiter = plan.checks, plan.limiter
    # Who hears of a success or a refusal: the policy's hooks, or else the process's
    # (instrument.listening, a list enable() changes in place).
    hears = policy.observe or instrument.listening
    tell_success = success_teller(policy)

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        if fast and (limiter is None or not limiter._enabled):  # the first try runs bare
            start: float | None
            if hears:  # the hooks as the call begins: it keeps them
                heard = hooks_now(policy) if _PROCESS["every"] else policy.observe
                start = clock()
            else:
                heard, start = (), clock() if timed else None
            # The checks stay inline here and in _async_wrapper: one helper for both
            # cost a breaker's first try 376 more instructions (cachegrind, 8.1k to 8.5k).
            if checks:  # (a loop over none still makes its iterator: a tenth of a bare call)
                given: Any = ()
                try:  # (given: what the parts before a check give back if it refuses)
                    for guard, given in checks:  # noqa: B007 (read below) - a refusal ends it
                        guard.check()
                except BaseException as refused:  # a refusal (or Ctrl-C in a check)
                    dropped(given, len(given))
                    if heard:
                        tell_refused(policy, heard, start, refused)  # type: ignore[arg-type]
                    raise
            try:
                result = func(*args, **kwargs)
            except BaseException as error:  # as in the loop: decided there
                call = Call(policy, start)
                if not call.settle(None, error, _NO_RESULT):
                    raise
            else:
                if on_result is None or not rejected(policy, result, start):
                    if afters:  # all a success at once needs told
                        told: Callable[..., object]  # the part being told
                        try:
                            if successes is not None:  # each part's one call (no frame of its own)
                                for told, success in successes:
                                    told(success)
                            else:
                                for told in afters:
                                    told(result, SUCCESS, 1, 0.0)
                        except BaseException as error:  # the parts after it hear all the same
                            _success_broken(
                                policy,
                                heard,
                                start,  # type: ignore[arg-type]
                                afters,
                                successes,
                                told,  # pyright: ignore[reportPossiblyUnboundVariable]
                                result,
                                error,
                            )
                            raise
                    if heard:
                        tell_success(heard, start, result)  # type: ignore[arg-type]
                    return result
                call = Call(policy, start)  # a result to retry: the loop takes it from here
                if not call.settle(None, None, result, True):
                    return result
        else:
            call = begin(policy, shown=False)
        # The loop of `for attempt in call: with attempt:`, without the `with`:
        # nobody but the hooks holds these attempts, so none is misused, and
        # each saves the calls of __enter__, __exit__ and set_result.
        while True:
            attempt = call.proceed()  # the parts asked first; an Attempt if a hook takes one
            if timeout_arg is not None:
                kwargs[timeout_arg] = call.timeout
            try:
                result = func(*args, **kwargs)
            except BaseException as error:
                if call.settle(attempt, error, _NO_RESULT):
                    continue  # slept: the next attempt
                raise
            if hides_async:
                awaitable = _awaitable_refused(func, result)
                if awaitable is not None:
                    call.stop(awaitable)  # the call's error, never retried
                    raise awaitable
            if call.quiet or not call.settle(attempt, None, result):
                return result

    return wrapper


def _success_broken(
    policy: Policy,
    heard: tuple[instrument.Hook, ...],
    start: float,
    afters: tuple[Callable[[Any, str, int, float], None], ...],
    successes: tuple[tuple[Callable[[bool], object], bool], ...] | None,
    told: Callable[..., object],
    result: Any,
    error: BaseException,
) -> None:
    """Part *told* raised *error* as ``@retry``'s bare first try (begun at
    *start*, *heard* listening) told it of its *result*: the parts after it
    hear of the success all the same, then the hooks hear the call end with
    *error* - or with an interruption a later part raised, which ends it
    instead (raised here)."""
    try:
        succeeded(afters, successes, told, result)
    except BaseException as interrupted:
        if heard:
            tell_broken(policy, heard, start, interrupted)
        raise
    if heard:
        tell_broken(policy, heard, start, error)


def _async_wrapper(
    policy: Policy, func: Callable[P, Awaitable[R]], timeout_arg: str | None = None
) -> Callable[P, Awaitable[R]]:
    plan, clock, on_result = policy.plan, policy.clock, policy.on_result
    fast, timed, afters, successes = plan.fast, plan.timed, plan.afters, plan.successes
    # (limiter, a CubicRateLimiter itself, is read by its slot, not its enabled
    # property: the property's call costs more than all the rest of the test)
    checks, limiter = plan.checks, plan.limiter
    # A part may set an attempt's timeout (attempt_timeout's, or the user's own):
    # then each attempt runs in its `async with`, which cancels it at the timeout.
    guarded, scoped = plan.guarded, plan.scoped
    # Who hears of a success or a refusal: the policy's hooks, or else the process's
    # (instrument.listening, a list enable() changes in place).
    hears = policy.observe or instrument.listening
    tell_success = success_teller(policy)

    @functools.wraps(func)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        if fast and (limiter is None or not limiter._enabled):  # the first try runs bare
            start: float | None
            if hears:  # the hooks as the call begins: it keeps them
                heard = hooks_now(policy) if _PROCESS["every"] else policy.observe
                start = clock()
            else:
                heard, start = (), clock() if timed else None
            if checks:  # (as in _sync_wrapper: no loop over none)
                given: Any = ()
                try:  # (given: what the parts before a check give back if it refuses)
                    for guard, given in checks:  # noqa: B007 (read below) - a refusal ends it
                        guard.check()
                except BaseException as refused:  # a refusal (or Ctrl-C in a check)
                    dropped(given, len(given))
                    if heard:
                        tell_refused(policy, heard, start, refused)  # type: ignore[arg-type]
                    raise
            cancelling = cancellations()
            try:
                result = await func(*args, **kwargs)
            except BaseException as error:  # as in the loop: decided there
                call = Call(policy, start, True, cancelling)
                if not await call.asettle(None, error, _NO_RESULT):
                    raise
            else:
                if on_result is None or not rejected(policy, result, start):
                    if afters:  # all a success at once needs told
                        told: Callable[..., object]  # the part being told
                        try:
                            if successes is not None:  # each part's one call (no frame of its own)
                                for told, success in successes:
                                    told(success)
                            else:
                                for told in afters:
                                    told(result, SUCCESS, 1, 0.0)
                        except BaseException as error:  # the parts after it hear all the same
                            _success_broken(
                                policy,
                                heard,
                                start,  # type: ignore[arg-type]
                                afters,
                                successes,
                                told,  # pyright: ignore[reportPossiblyUnboundVariable]
                                result,
                                error,
                            )
                            raise
                    if heard:
                        tell_success(heard, start, result)  # type: ignore[arg-type]
                    return result
                call = Call(policy, start, True, cancelling)  # a result to retry: to the loop
                if not await call.asettle(None, None, result, True):
                    return result
        else:
            call = begin(policy, in_async=True, shown=False)
        attempt: Attempt | None
        if scoped:
            async for attempt in call:
                async with attempt:
                    if timeout_arg is not None:
                        kwargs[timeout_arg] = attempt.timeout
                    result = attempt.set_result(await func(*args, **kwargs))
            return result  # pyright: ignore[reportPossiblyUnboundVariable, reportReturnType] - set, or raised
        # As the sync wrapper's loop: no `async with`, and no __anext__ to await
        # unless a part is asked first (timeout_arg comes with attempt_timeout: scoped).
        while True:
            attempt = await call.__anext__() if guarded else call.proceed()
            try:
                result = await func(*args, **kwargs)
            except BaseException as error:
                if await call.asettle(attempt, error, _NO_RESULT):
                    continue  # slept: the next attempt
                raise
            if call.quiet or not await call.asettle(attempt, None, result):
                return result

    return wrapper
