"""Simulate contention like the AWS study "Exponential Backoff And Jitter".

One server holds one row with an integer version.  Each of *N* clients wants
one successful write: it reads the version, then writes carrying it; the
write succeeds (version += 1) only if nobody wrote in between.  On failure
the client backs off per its strategy and reads again.  Every one-way
network hop takes ``|Normal(10, 2)|`` ms; server work takes no time.

*Work* is the number of writes the server received; *time* is when the last
client got its success reply (ms).  Both are averaged over independent runs.
Calls share no state, so any thread may run one; only the *rng* given to
:func:`simulate_once` must not be drawn from elsewhere meanwhile.

>>> [r.work for r in simulate(["none"], clients=[1, 2], runs=3, seed=1)]
[1.0, 3.0]

Each client backs off with its own generator of a strategy from
:data:`STUDY_STRATEGIES`, made from the study's base and cap (ms):

>>> from itertools import islice
>>> new_schedule = STUDY_STRATEGIES["exponential"](5.0, 2000.0, random.Random(1))
>>> list(islice(new_schedule(), 4)), list(islice(new_schedule(), 2))
([10.0, 20.0, 40.0, 80.0], [10.0, 20.0])
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from itertools import chain, islice
from typing import NamedTuple

from . import _checks
from .strategies import STRATEGIES as _LIBRARY
from .strategies import constant, maker

__all__ = ["MAX_WORK", "STUDY_STRATEGIES", "Result", "Run", "simulate", "simulate_once"]

HOP_MEAN, HOP_SD = 10.0, 2.0  # ms, one way
DEFAULT_CLIENTS = tuple(range(10, 200, 10))
DEFAULT_STRATEGIES = ("exponential", "full_jitter", "equal_jitter", "decorrelated", "smooth_jitter")
RUNS_PER_TASK = 20  # runs summed by one task; the same whatever the number of jobs
#: The most work a study (or one run) may ask for, in client pairs: a run of n clients costs
#: about n² steps, so a study costs the sum over its cells of clients² x runs.
#: 10**10 is about half an hour on one core of a 2020s machine.
MAX_WORK = 10**10

#: Makes one client's delays (ms): called once per client that must back off.
NewSchedule = Callable[[], Iterator[float]]
#: A strategy of the study: (base, cap, a run's rng) to the maker of that run's schedules.
StudyStrategy = Callable[[float, float, random.Random], NewSchedule]


def _study(name: str, base: float, cap: float, rng: random.Random) -> NewSchedule:
    """Strategy *name* as the study makes it.  The study counts attempts from 1,
    so a strategy's first wait is min(cap, 2·base), except decorrelated's,
    which starts from base (its first wait lies in [base, 3·base])."""
    scale = 1.0 if name == "decorrelated" else 2.0
    return maker(name, base=scale * base, cap=cap, rng=rng)


#: The strategies of the study, by name: every strategy of the library, and
#: ``"none"`` (retry at once).  Each takes the study's base and cap (ms) and
#: one run's generator, and returns what makes a client's delays in that run
#: (the options are sorted out once per run, not once per client).  Their
#: delays draw from the generator with ``random()`` only.
STUDY_STRATEGIES: dict[str, StudyStrategy] = {
    "none": lambda base, cap, rng: partial(constant, 0.0),
    **{name: partial(_study, name) for name in _LIBRARY},
}

_READ = -1  # the version an event carries when it is a read, not a write
_TWO_PI = 2.0 * math.pi  # as random.py computes it


class Run(NamedTuple):
    """One run: writes the server received, ms until the last success reply,
    and how many writes succeeded (every client's, when all finished)."""

    work: int
    time: float
    successes: int


class Result(NamedTuple):
    """Mean work (writes) and time (ms) of one strategy at one client count:
    one row of what :func:`simulate` returns."""

    strategy: str
    clients: int
    work: float
    time: float


def simulate_once(
    strategy: str,
    clients: int,
    rng: random.Random,
    *,
    base: float = 5.0,
    cap: float = 2000.0,
) -> Run:
    """One run of *clients* clients backing off with *strategy*.

    *rng* is a :class:`random.Random` (a subclass too); the run goes on with
    its stream, so runs sharing one generator differ.  Each hop time is
    ``abs(rng.gauss(10, 2))``, drawn as :meth:`random.Random.gauss` draws it
    (two ``rng.random()`` draws per pair of normals, the second kept for the
    next hop), though a subclass's own ``gauss`` is not called.  A run costs
    about clients² steps, and one of more than :data:`MAX_WORK` is refused
    as a study of it would be, naming *clients*.

    >>> run = simulate_once("full_jitter", 3, random.Random(0))
    >>> run.successes, run.work >= 3
    (3, True)
    """
    study_strategy = _strategy(strategy)
    clients = _checks.count("clients", clients, minimum=1)  # (a numpy integer made an int)
    _bounded(1, [clients], 1)
    base, cap = _base_and_cap(base, cap)
    if not isinstance(rng, random.Random):
        raise _checks.ArgumentTypeError(
            "rng", f"rng must be a random.Random, got {_checks.shown(rng)}"
        )
    return _run(study_strategy(base, cap, rng), clients, rng)


def _base_and_cap(base: object, cap: object) -> tuple[float, float]:
    """The study's base and cap (ms), checked as the user gave them."""
    checked = _checks.seconds("base", base)
    if not math.isfinite(2.0 * checked):  # the study waits 2·base at first
        raise _checks.ArgumentValueError(
            "base", f"base must be at most {_checks.FLOAT_MAX / 2:g}, got {_checks.shown(base)}"
        )
    return checked, _checks.seconds("cap", cap, infinite=True)


def _run(new_schedule: NewSchedule, clients: int, rng: random.Random) -> Run:
    """One run, event by event, on a heap of (time, client, version carried).

    Every hop is ``abs(rng.gauss(HOP_MEAN, HOP_SD))``, and ``gauss`` is
    Box-Muller (random.py, the same in Python 3.9 to 3.13): with no normal
    kept, draw ``x = 2π·random()`` and ``r = sqrt(-2·log(1 - random()))``,
    use ``cos(x)·r`` and keep ``sin(x)·r`` (in ``rng.gauss_next``) for the
    next call.  The loop does that inline, the kept normal in a local
    (``spare``): the method call was 42% of the study's time.  The
    strategies draw from the same rng, with ``random()`` only, in between;
    the numbers, their order and so every float are what ``gauss`` gives.
    """
    random_, cos, sin, log, sqrt = rng.random, math.cos, math.sin, math.log, math.sqrt
    two_pi, mean, sd, read = _TWO_PI, HOP_MEAN, HOP_SD, _READ
    # None, or the normal gauss would return next (set by seed(); not in typeshed)
    spare: float | None = rng.gauss_next  # type: ignore[attr-defined]
    events = []
    for client in range(clients):  # the hop of each client's first read
        if spare is None:
            x = random_() * two_pi
            r = sqrt(-2.0 * log(1.0 - random_()))
            hop = mean + cos(x) * r * sd
            spare = sin(x) * r
        else:
            hop = mean + spare * sd
            spare = None
        events.append((hop if hop >= 0.0 else -hop, client, read))
    heapq.heapify(events)
    heappop, heapreplace = heapq.heappop, heapq.heapreplace
    schedules: list[Iterator[float] | None] = [None] * clients
    version = writes = 0
    last_success = 0.0
    while events:
        now, client, carried = events[0]  # popped below, by heapreplace or heappop
        if carried == read:
            # The reply goes back with the current version and the client
            # sends its write at once: nothing else can happen to it between.
            # Two hops: the reply's, then the write's.
            if spare is None:
                x = random_() * two_pi
                r = sqrt(-2.0 * log(1.0 - random_()))
                back = mean + cos(x) * r * sd
                out = mean + sin(x) * r * sd
            else:
                back = mean + spare * sd
                x = random_() * two_pi
                r = sqrt(-2.0 * log(1.0 - random_()))
                out = mean + cos(x) * r * sd
                spare = sin(x) * r
            if back < 0.0:
                back = -back
            if out < 0.0:
                out = -out
            heapreplace(events, (now + back + out, client, version))
            continue
        writes += 1
        if spare is None:  # the reply's hop
            x = random_() * two_pi
            r = sqrt(-2.0 * log(1.0 - random_()))
            hop = mean + cos(x) * r * sd
            spare = sin(x) * r
        else:
            hop = mean + spare * sd
            spare = None
        reply = now + (hop if hop >= 0.0 else -hop)
        if carried == version:
            version += 1
            if reply > last_success:
                last_success = reply
            heappop(events)
            continue
        schedule = schedules[client]
        if schedule is None:
            schedule = schedules[client] = new_schedule()
        backoff = next(schedule)
        if spare is None:  # the next read's hop, after the backoff's draws
            x = random_() * two_pi
            r = sqrt(-2.0 * log(1.0 - random_()))
            hop = mean + cos(x) * r * sd
            spare = sin(x) * r
        else:
            hop = mean + spare * sd
            spare = None
        heapreplace(events, (reply + (hop if hop >= 0.0 else -hop) + backoff, client, read))
    rng.gauss_next = spare  # type: ignore[attr-defined]  # the stream goes on as after gauss
    return Run(writes, last_success, version)


class _Task(NamedTuple):
    """Runs start..stop of one (strategy, clients) cell: each run seeded on its own."""

    strategy: str
    clients: int
    start: int
    stop: int
    seed: int | None
    base: float
    cap: float

    def cost(self) -> int:
        """Roughly proportional to the time it takes: writes per run grow
        about with the square of the clients."""
        return self.clients * self.clients * (self.stop - self.start)

    def __call__(self) -> tuple[float, float]:
        study_strategy = STUDY_STRATEGIES[self.strategy]
        work = time = 0.0
        for number in range(self.start, self.stop):
            seed = (
                None
                if self.seed is None
                else f"{self.seed}/{self.strategy}/{self.clients}/{number}"
            )
            rng = random.Random(seed)
            run = _run(study_strategy(self.base, self.cap, rng), self.clients, rng)
            work += run.work
            time += run.time
        return work, time


def _do(task: _Task) -> tuple[_Task, tuple[float, float]]:
    return task, task()


def _hold_ctrl_c() -> Callable[[], object]:
    """Hold (block) SIGINT in this thread while workers start (or are stopped: a
    Ctrl-C cutting ``terminate()`` short leaves ``join()`` waiting for ever);
    returns what lets it through.

    A terminal's Ctrl-C goes to every process of the group, workers included, and a
    worker takes some 0.3 s to start (an interpreter, then the imports of the task's
    modules) before its initializer can ignore SIGINT: it would die printing a
    traceback.  Workers started meanwhile inherit the mask through fork and exec and
    hold SIGINT until :func:`_quiet_worker` ignores it; this process gets a Ctrl-C of
    that moment once it lets SIGINT through.  multiprocessing starts its resource
    tracker so too, but then unblocks SIGINT: it is started first, lest it let SIGINT
    through for the workers started after it.  (Windows has no signal masks.)
    """
    import signal

    if not hasattr(signal, "pthread_sigmask"):
        return lambda: None
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    return partial(signal.pthread_sigmask, signal.SIG_SETMASK, mask)


def _quiet_worker() -> None:
    """Workers leave Ctrl-C to the parent, which stops them: SIGINT ignored, then let
    through (it was held while the worker started: see :func:`_hold_ctrl_c`)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # drops one held meanwhile
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def simulate(
    strategies: Iterable[str] | None = None,
    clients: Iterable[int] = DEFAULT_CLIENTS,
    runs: int = 100,
    *,
    seed: int | None = None,
    base: float = 5.0,
    cap: float = 2000.0,
    jobs: int = 1,
    progress: Callable[[int, int], object] | None = None,
) -> list[Result]:
    """Mean work and time for each strategy and client count, over *runs* runs.

    *strategies* are names from
    :data:`~backoff_iter.simulation.STUDY_STRATEGIES` (default: five
    strategies of the library, without ``"none"``); a name or count given
    twice counts once.  With a *seed* the results repeat exactly: each run
    has its own stream, so asking for fewer strategies, or running on more
    *jobs*, gives the same figures.  *progress(runs_done, runs_total)* is
    called as runs finish.  A run of n clients costs about n² steps: a
    study of more than :data:`~backoff_iter.simulation.MAX_WORK` (clients²
    x runs, summed over its cells) is refused, naming *clients* or *runs*.

    *jobs* > 1 spawns that many processes, but never more than there are
    tasks (of up to 20 runs of one pair each); a study of one task runs in
    this process, and more jobs than cores gain nothing.  The costliest
    tasks go first, and results are taken as they come.  A script calling
    it with *jobs* > 1 must do so under ``if __name__ == "__main__":``,
    as :mod:`multiprocessing` requires.

    >>> rows = simulate(["exponential", "full_jitter"], clients=[5], runs=10, seed=7)
    >>> [(r.strategy, r.clients) for r in rows]
    [('exponential', 5), ('full_jitter', 5)]
    >>> rows == simulate(["exponential", "full_jitter"], clients=[5], runs=10, seed=7)
    True
    """
    if isinstance(strategies, str):  # one name is not a list of one-letter names
        raise _checks.ArgumentTypeError(
            "strategies", f"strategies must be a list of names, got {_checks.shown(strategies)}"
        )
    names = list(
        DEFAULT_STRATEGIES if strategies is None else _checks.iterable("strategies", strategies)
    )
    for name in names:
        _strategy(name, "strategies")
    counts = [_checks.count("clients", n, minimum=1) for n in _checks.iterable("clients", clients)]
    if not names:
        raise _checks.ArgumentValueError("strategies", "strategies must name at least one strategy")
    if not counts:
        raise _checks.ArgumentValueError("clients", "clients must name at least one count")
    runs = _checks.count("runs", runs, minimum=1)  # (a numpy integer's products wrap round)
    names, counts = list(dict.fromkeys(names)), list(dict.fromkeys(counts))  # each once
    _bounded(len(names), counts, runs)
    base, cap = _base_and_cap(base, cap)
    seed = _checks.seed("seed", seed)
    jobs = _checks.count("jobs", jobs, minimum=1)
    if progress is not None:
        _checks.function("progress", progress)
    cells = [(name, n) for name in names for n in counts]
    tasks = [_cell_tasks(name, n, runs, seed, base, cap) for name, n in cells]
    # Each cell's figures are added in its tasks' order, whatever order they
    # finish in: the floats are those one process gets.
    sums = {cell: [0.0, 0.0] for cell in cells}
    next_start = dict.fromkeys(cells, 0)
    waiting: dict[tuple[str, int], dict[int, tuple[int, tuple[float, float]]]] = {
        cell: {} for cell in cells
    }
    total, done = runs * len(cells), 0

    def finished(task: _Task, figures: tuple[float, float]) -> None:
        nonlocal done
        cell = task.strategy, task.clients
        waiting[cell][task.start] = task.stop, figures
        while next_start[cell] in waiting[cell]:
            next_start[cell], (work, time) = waiting[cell].pop(next_start[cell])
            sums[cell][0] += work
            sums[cell][1] += time
        done += task.stop - task.start
        if progress is not None:
            progress(done, total)

    processes = min(jobs, len(cells) * -(-runs // RUNS_PER_TASK))
    if processes == 1:
        for task in chain.from_iterable(tasks):
            finished(task, task())
    else:
        _in_processes(_costliest_first(tasks), processes, finished)
    return [Result(name, n, sums[name, n][0] / runs, sums[name, n][1] / runs) for name, n in cells]


def _bounded(strategies: int, counts: list[int], runs: int) -> None:
    """Refuse a study of more than :data:`MAX_WORK` (naming *clients* when one
    run of the largest count is too much already, else *runs*)."""
    largest = max(counts) ** 2 * strategies
    work = sum(n * n for n in counts) * strategies * runs
    if work <= MAX_WORK:
        return
    name = "clients" if largest > MAX_WORK else "runs"
    cells = strategies * len(counts)
    cost = f"{work:,}" if work < 10**30 else _checks.shown(work)
    raise _checks.ArgumentValueError(
        name,
        f"a study may cost at most {MAX_WORK:,} steps (clients² x runs, summed over its"
        f" {cells:,} cell{'' if cells == 1 else 's'}; about half an hour on one core):"
        f" this one costs {cost}: ask for fewer clients or runs",
    )


def _cell_tasks(
    strategy: str, clients: int, runs: int, seed: int | None, base: float, cap: float
) -> Iterator[_Task]:
    """The tasks of one cell, in order, made as they are handed out."""
    for start in range(0, runs, RUNS_PER_TASK):
        yield _Task(strategy, clients, start, min(runs, start + RUNS_PER_TASK), seed, base, cap)


def _costliest_first(tasks: Iterable[Iterator[_Task]]) -> Iterator[_Task]:
    """Every cell's tasks (each cell's in order, its last one maybe smaller),
    merged costliest first; among equals, the earlier cell's first."""
    return heapq.merge(*tasks, key=lambda task: -task.cost())


def _in_processes(
    tasks: Iterator[_Task],
    processes: int,
    finished: Callable[[_Task, tuple[float, float]], None],
) -> None:
    """Run *tasks* on *processes* new processes, in the order given, handing
    each result to *finished* as soon as it comes.  Only a few tasks are
    handed out ahead of the results, so memory stays small for any number
    of runs."""
    import multiprocessing
    import queue

    results: queue.SimpleQueue[tuple[_Task, tuple[float, float]] | BaseException]
    results = queue.SimpleQueue()
    release = _hold_ctrl_c()
    try:
        pool = multiprocessing.get_context("spawn").Pool(processes, initializer=_quiet_worker)
    except BaseException:
        release()
        raise
    try:
        release()  # a Ctrl-C held while the workers started comes now, and stops them
        ahead = 0
        for task in islice(tasks, 4 * processes):
            pool.apply_async(_do, (task,), callback=results.put, error_callback=results.put)
            ahead += 1
        while ahead:
            result = results.get()
            ahead -= 1
            if isinstance(result, BaseException):
                raise result
            for task in islice(tasks, 1):
                pool.apply_async(_do, (task,), callback=results.put, error_callback=results.put)
                ahead += 1
            finished(*result)
        pool.close()  # done: the workers exit on their own, as a process should
        pool.join()
    except BaseException:  # an error, or Ctrl-C: stop the workers where they are
        release = _hold_ctrl_c()  # (a second Ctrl-C cut terminate() short: join() hung)
        try:
            pool.terminate()
            pool.join()
        finally:
            release()  # a Ctrl-C held meanwhile comes now
        raise


def _strategy(name: str, parameter: str = "strategy") -> StudyStrategy:
    try:
        return STUDY_STRATEGIES[name]
    except (KeyError, TypeError):
        raise _checks.ArgumentValueError(
            parameter,
            f"{parameter} must be among {', '.join(STUDY_STRATEGIES)}, got {_checks.shown(name)}",
        ) from None
