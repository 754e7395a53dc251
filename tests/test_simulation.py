"""The contention simulator's invariants (not tuned figures)."""

from __future__ import annotations

import importlib.util
import math
import multiprocessing
import random
import signal
import subprocess
import sys
from itertools import islice
from pathlib import Path

import pytest
from checks import rejects
from hypothesis import given, settings
from hypothesis import strategies as st

from backoff_iter.simulation import DEFAULT_STRATEGIES, STUDY_STRATEGIES, simulate, simulate_once

ROOT = Path(__file__).resolve().parent.parent


def _benchmark(name):
    """benchmarks/NAME.py as a module (the plain reference loop lives there)."""
    spec = importlib.util.spec_from_file_location(
        f"benchmark_{name}", ROOT / "benchmarks" / f"{name}.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


study = _benchmark("study")
names = st.sampled_from(sorted(STUDY_STRATEGIES))


def schedule(name, base, cap, rng):
    """One client's delays as the study makes them."""
    return STUDY_STRATEGIES[name](base, cap, rng)()


@settings(max_examples=40)
@given(names, st.integers(min_value=1, max_value=40), st.integers(min_value=0, max_value=2**32))
def test_every_client_finishes_and_work_is_at_least_the_clients(strategy, clients, seed):
    """Each run ends with one successful write per client; failed writes only add work."""
    run = simulate_once(strategy, clients, random.Random(seed))
    assert run.successes == clients
    assert run.work >= clients
    assert run.time > 0


def test_one_client_never_collides():
    """A lone client writes once, whatever its strategy."""
    for strategy in STUDY_STRATEGIES:
        assert simulate_once(strategy, 1, random.Random(3)).work == 1


def test_seeded_studies_repeat_exactly_and_seeds_matter():
    """The same seed gives identical results; another seed gives others."""
    first = simulate(clients=[10, 20], runs=5, seed=11)
    assert first == simulate(clients=[10, 20], runs=5, seed=11)
    assert first != simulate(clients=[10, 20], runs=5, seed=12)


def test_fewer_strategies_give_the_same_figures():
    """Each (strategy, clients) pair has its own stream: subsets agree with the full study."""
    full = simulate(clients=[15], runs=4, seed=5)
    alone = simulate(["decorrelated"], clients=[15], runs=4, seed=5)
    assert alone == [r for r in full if r.strategy == "decorrelated"]


def test_results_cover_every_strategy_and_client_count_in_order():
    """One Result per pair, strategies in the order asked, means as floats."""
    rows = simulate(["none", "full_jitter"], clients=[3, 6], runs=2, seed=1)
    assert [(r.strategy, r.clients) for r in rows] == [
        ("none", 3),
        ("none", 6),
        ("full_jitter", 3),
        ("full_jitter", 6),
    ]
    assert all(isinstance(r.work, float) and isinstance(r.time, float) for r in rows)


def test_the_strategies_use_the_studys_parameters():
    """Exponential family first waits min(cap, 2·base); decorrelated starts at base; none is 0."""
    rng = random.Random(0)
    assert next(schedule("none", 5, 2000, rng)) == 0.0
    assert list(islice(schedule("exponential", 5, 2000, rng), 3)) == [10.0, 20.0, 40.0]
    assert next(schedule("exponential", 5, 8, rng)) == 8.0
    firsts = [next(schedule("full_jitter", 5, 2000, rng)) for _ in range(500)]
    assert min(firsts) >= 0 and max(firsts) <= 10 and max(firsts) > 9.5
    firsts = [next(schedule("decorrelated", 5, 2000, rng)) for _ in range(500)]
    assert 5 <= min(firsts) < 5.5 and 14.5 < max(firsts) <= 15


def test_one_runs_strategy_makes_a_fresh_schedule_for_each_client():
    """The maker a strategy returns for a run starts every client's delays from the first."""
    new_schedule = STUDY_STRATEGIES["exponential"](5, 2000, random.Random(0))
    first, second = new_schedule(), new_schedule()
    assert list(islice(first, 3)) == [10.0, 20.0, 40.0]
    assert list(islice(second, 2)) == [10.0, 20.0]


def test_jitter_cuts_the_work_of_plain_exponential_backoff():
    """The study's finding, by a wide margin: without jitter, clients collide again and again."""
    rows = {
        r.strategy: r.work
        for r in simulate(["exponential", "full_jitter"], clients=[50], runs=10, seed=2)
    }
    assert rows["exponential"] > 1.5 * rows["full_jitter"]


@pytest.mark.parametrize(
    "call, error, word",
    [
        (lambda: simulate(["bogus"], clients=[2], runs=1), ValueError, "strategies"),
        (lambda: simulate(clients=[0], runs=1), ValueError, "clients"),
        (lambda: simulate(clients=[2], runs=0), ValueError, "runs"),
        (lambda: simulate(clients=[2], runs=1, base=-1), ValueError, "base"),
        (lambda: simulate(clients=[2.5], runs=1), TypeError, "clients"),
        (lambda: simulate_once("none", 3, random.Random(), cap=-1), ValueError, "cap"),
        (lambda: simulate(clients=[2], runs=1, jobs=0), ValueError, "jobs"),
        (lambda: simulate(clients=[2], runs=1, jobs=2.0), TypeError, "jobs"),
        (lambda: simulate(clients=[2], runs=1, progress=5), TypeError, "progress"),
        (lambda: simulate([], clients=[2], runs=1), ValueError, "strategies"),
        (lambda: simulate("full_jitter", clients=[2], runs=1), TypeError, "strategies"),
        (lambda: simulate(clients=[], runs=1), ValueError, "clients"),
        (lambda: simulate(clients=5, runs=1), TypeError, "clients"),
        (lambda: simulate(clients=[2], runs=1, base=1e308), ValueError, "base"),
        (lambda: simulate_once("bogus", 3, random.Random()), ValueError, "strategy"),
        (lambda: simulate_once("none", 0, random.Random()), ValueError, "clients"),
        (lambda: simulate_once("none", 3, None), TypeError, "rng"),
        (lambda: simulate_once("none", 3, random), TypeError, "rng"),
        (lambda: simulate(clients=[2], runs=1, seed=1.5), TypeError, "seed"),
        (lambda: simulate(clients=[2], runs=1, seed=True), TypeError, "seed"),
        (lambda: simulate(clients=[2], runs=1, seed=[1]), TypeError, "seed"),
    ],
)
def test_bad_arguments_are_rejected_before_any_run(call, error, word):
    """Unknown strategies, bad counts, jobs, rng or progress, and out-of-range parameters raise at once."""
    rejects(call, error, word)


@pytest.mark.skipif(not hasattr(sys, "get_int_max_str_digits"), reason="3.11+: str() has a limit")
def test_a_seed_of_more_digits_than_str_converts_is_refused_naming_it():
    """Its digits name the runs' streams: past str()'s limit, an error naming seed (not the
    interpreter's ValueError naming nothing); a seed of fewer digits, negative too, runs."""
    limit = sys.get_int_max_str_digits()
    rejects(lambda: simulate(["none"], [2], 1, seed=10**limit), ValueError, "seed", "digits")
    assert simulate(["none"], [2], 1, seed=-(10**limit - 1))[0].work >= 2


@pytest.mark.parametrize(
    "clients, runs, word",
    [
        ([2], 10**21, "runs"),
        ([2], 10**400, "runs"),
        ([10**6], 1, "clients"),
        ([80_000], 1, "clients"),
    ],
)
def test_a_study_costing_more_than_its_bound_is_refused_at_once(clients, runs, word):
    """clients² x runs, summed over the cells, at most MAX_WORK: beyond, an error naming the
    runs (or the clients, if one run is too much already) - not an OverflowError from a
    count of tasks, nor a study that runs for days without a word."""

    def ran(done, total):  # were the bound lost, the first runs end the test, not hours later
        raise AssertionError(f"the study began: {done} of {total} runs")

    study = ["none", "full_jitter"]
    rejects(lambda: simulate(study, clients, runs, progress=ran), ValueError, word, "at most")


class Unstarted(random.Random):
    """A generator a run must not draw from: its first hop ends the test."""

    def random(self):
        raise AssertionError("the run began")


def test_one_run_costing_more_than_a_study_may_is_refused_at_once():
    """simulate_once of 10**6 clients (about 10**12 steps) or 10**30 (a list of them before
    any step) is refused naming clients, as simulate refuses it; 100,000, the bound, starts."""
    for clients in (100_001, 10**6, 10**30):
        rejects(lambda n=clients: simulate_once("none", n, Unstarted()), ValueError, "clients")
    with pytest.raises(AssertionError, match="the run began"):
        simulate_once("none", 100_000, Unstarted())


class ScriptedRng:
    """gauss() returns the scripted hop times in turn (the simulator takes abs())."""

    def __init__(self, hops):
        self.hops = iter(hops)

    def gauss(self, mean, sd):
        return next(self.hops)


def test_time_is_the_latest_success_reply_not_the_last_one_processed():
    """Client 0's reply comes at 62 ms, client 1's (processed later) at 15 ms: time is 62.

    This checks the plain reference loop; the next test holds the simulator to it."""
    # Reads reach the server at 10 and 12 ms; client 0 writes at 12 (reply +50),
    # client 1 writes at 14 (reply +1).
    rng = ScriptedRng([10, 12, 1, 1, 50, 1, 1, 1])
    assert study.reference_run("none", 2, rng) == (2, 62.0, 2)


class Scripted(random.Random):
    """random() returns the values of scripted(...) in turn."""

    values = iter(())

    def random(self):
        return next(self.values)


def scripted(values):
    """A Scripted generator (made from a seed: Python 3.9 hands the arguments to the C type)."""
    rng = Scripted(0)
    rng.values = iter(values)
    return rng


def normals(cosine, sine):
    """The two random() draws from which Box-Muller makes this pair of normals."""
    angle = math.atan2(sine, cosine) / (2 * math.pi) % 1.0
    return [angle, 1.0 - math.exp(-(cosine**2 + sine**2) / 2)]


def test_the_simulator_takes_the_latest_success_reply_too():
    """Client 0 succeeds first with a 23 ms reply, client 1 later with a 1 ms one: time is 35."""
    # A hop is |10 + 2·z|: z = -4.5 makes 1 ms, z = 6.5 makes 23, z = 8.57 (the
    # largest normal random() can give) about 27.1.
    draws = [
        0.25,
        1.0 - 2**-53,  # first reads: client 0 at 10 ms, client 1 at 27.1 (z = 0, 8.57)
        *normals(-4.5, -4.5),  # client 0's read: 1 ms back, 1 out: writes at 12
        *normals(6.5, -4.25),  # its reply takes 23 ms (35); client 1's read reply 1.5
        *normals(-4.5, -4.5),  # client 1: 1 ms out, writes at 29.6; its reply, 1
    ]
    run = simulate_once("none", 2, scripted(draws))
    assert run == study.reference_run("none", 2, scripted(draws))
    assert run.successes == run.work == 2
    assert run.time == pytest.approx(35.0, abs=1e-3)


@settings(max_examples=60)
@given(
    names,
    st.integers(min_value=1, max_value=40),
    st.integers(min_value=0, max_value=2**32),
    st.booleans(),
)
def test_a_run_is_the_plain_loop_drawing_every_hop_with_gauss(strategy, clients, seed, primed):
    """Same Run as the reference loop (rng.gauss per hop), and the rng left in the same state.

    *primed*: the generator starts with a normal kept by an earlier gauss call."""
    ours, theirs = random.Random(seed), random.Random(seed)
    if primed:
        assert ours.gauss(0.0, 1.0) == theirs.gauss(0.0, 1.0)
    assert simulate_once(strategy, clients, ours) == study.reference_run(strategy, clients, theirs)
    assert ours.getstate() == theirs.getstate()  # the kept normal (gauss_next) included


class Extremes(random.Random):
    """random() picks from values that make Box-Muller's normals extreme: with
    1 - 2**-53 the radius is 8.57, so an angle of 0.5 or 0.75 turns makes a
    negative hop (10 - 2·8.57) for the cosine or the sine."""

    VALUES = (0.5, 0.75, 1 - 2**-53, 0.0, 0.25, 0.9)

    def random(self):
        return self.VALUES[self.getrandbits(8) % len(self.VALUES)]


@pytest.mark.parametrize("strategy", ["none", "full_jitter", "decorrelated"])
def test_negative_normals_make_hops_of_their_absolute_value(strategy):
    """With many negative normals (rare in real streams), every hop is still abs(gauss)."""
    negatives = 0
    for seed in range(40):
        ours, theirs = Extremes(seed), Extremes(seed)
        assert simulate_once(strategy, 6, ours) == study.reference_run(strategy, 6, theirs)
        assert ours.getstate() == theirs.getstate()
        probe = Extremes(seed)
        negatives += sum(probe.gauss(10.0, 2.0) < 0 for _ in range(200))
    assert negatives > 100  # the draws do reach below zero


def test_the_hops_are_drawn_from_random_not_through_a_subclass_gauss():
    """A subclass's random() feeds the hops (as Random.gauss would use it); its gauss is not called."""

    class Counting(random.Random):
        draws = 0

        def random(self):
            Counting.draws += 1
            return super().random()

        def gauss(self, mu=0.0, sigma=1.0):
            raise AssertionError("the simulator draws hops from random()")

    rng = Counting(5)
    run = simulate_once("exponential", 4, rng)  # exponential itself draws nothing
    # A hop to each client's first read; per write, the read's reply, the write
    # and the write's reply; after a failed write, the hop to the next read.
    hops = 4 + 3 * run.work + (run.work - run.successes)
    assert Counting.draws == hops + hops % 2  # two draws for each pair of normals
    assert run == study.reference_run("exponential", 4, random.Random(5))


def test_every_strategy_of_the_library_is_in_the_study():
    """The study's registry follows the library's: adding a strategy there adds it here."""
    from backoff_iter.strategies import STRATEGIES as LIBRARY

    assert set(STUDY_STRATEGIES) == {"none", *LIBRARY}


# -- the figures themselves ----------------------------------------------------------
# Derived by running the model as it stood before the speed work (commit 5d2f029,
# random.Random.gauss drawing every hop) on CPython 3.11.7, and checked on 3.9 and
# 3.13: the study must give these very floats, not merely close ones.
PINNED_SMALL = [
    ("none", 7, 26.333333333333332, 261.3267889578362),
    ("none", 30, 283.6666666666667, 780.5262490890395),
    ("constant", 7, 28.0, 344.8863549371822),
    ("constant", 30, 285.6666666666667, 987.5575005662078),
    ("decorrelated", 7, 23.333333333333332, 331.9613987217748),
    ("decorrelated", 30, 185.33333333333334, 1240.8531758836245),
    ("equal_jitter", 7, 24.666666666666668, 418.3455135518364),
    ("equal_jitter", 30, 185.66666666666666, 2467.7837364263924),
    ("exponential", 7, 26.666666666666668, 797.048668437786),
    ("exponential", 30, 266.6666666666667, 19912.388151955856),
    ("fibonacci", 7, 28.0, 492.5505697004798),
    ("fibonacci", 30, 271.3333333333333, 14497.264564917947),
    ("full_jitter", 7, 23.666666666666668, 348.48637581443217),
    ("full_jitter", 30, 169.33333333333334, 1446.8351801973047),
    ("linear", 7, 28.0, 499.64387577750017),
    ("linear", 30, 293.3333333333333, 2714.7687930084826),
    ("smooth_jitter", 7, 25.333333333333332, 398.809392633207),
    ("smooth_jitter", 30, 173.0, 1445.8461872846717),
]
# 45 runs: three tasks per cell (20, 20 and 5 runs), summed in that order.
PINNED_SPLIT = [
    ("exponential", 25, 207.0222222222222, 18243.150301689413),
    ("full_jitter", 25, 135.86666666666667, 1334.5702383358941),
    ("decorrelated", 25, 140.95555555555555, 1004.1735534701897),
]


def test_seeded_figures_are_exactly_those_of_the_original_model():
    """Every strategy, with seed 2026, gives the pinned floats bit for bit."""
    names = list(dict.fromkeys(name for name, *_ in PINNED_SMALL))
    rows = simulate(names, clients=[7, 30], runs=3, seed=2026)
    assert [tuple(r) for r in rows] == PINNED_SMALL


def test_seeded_figures_summed_over_several_tasks_are_exactly_the_original_ones():
    """Runs split into tasks of 20 are summed in task order: the pinned floats again."""
    names = [name for name, *_ in PINNED_SPLIT]
    rows = simulate(names, clients=[25], runs=45, seed=2026)
    assert [tuple(r) for r in rows] == PINNED_SPLIT


def test_one_generator_through_several_runs_draws_what_gauss_would():
    """Runs sharing one Random continue its stream (the cached second normal included)."""
    rng = random.Random(99)
    first = simulate_once("decorrelated", 12, rng)
    second = simulate_once("full_jitter", 12, rng)
    assert first == (48, 457.7574194693769, 12)
    assert second == (53, 636.7786936444303, 12)
    assert rng.gauss(0.0, 1.0) == -0.0035252597799947894
    assert rng.gauss(0.0, 1.0) == 2.9391883507600585


def docs_study_tables():
    """The two tables of the studies page's contention study: {clients: [cells]}
    for work and for time."""
    from pathlib import Path

    page = Path(__file__).resolve().parent.parent / "docs" / "studies.rst"
    text = page.read_text(encoding="utf-8")
    section = text.split(".. study-start", 1)[1].split(".. study-end", 1)[0]
    tables, header = [], None
    for line in section.splitlines():
        if line.startswith("clients"):
            header = line.split()[1:]
            tables.append({})
        elif header and line.strip()[:1].isdigit():
            clients, *cells = line.split()
            tables[-1][int(clients)] = dict(zip(header, cells))
    return tables


@pytest.mark.long_run
def test_the_docs_tables_show_what_the_default_study_gives_for_a_few_rows():
    """The rows for 10, 20 and 50 clients, recomputed with seed 2026 (a subset of the study)."""
    work, time = docs_study_tables()
    assert sorted(work) == sorted(time) == [10, 20, 50, 100, 150, 190]
    assert list(work[10]) == list(time[10]) == list(DEFAULT_STRATEGIES)
    for r in simulate(clients=[10, 20, 50], runs=100, seed=2026):
        assert work[r.clients][r.strategy] == f"{r.work:,.0f}", r
        assert time[r.clients][r.strategy] == f"{r.time / 1000:.2f}", r


# -- processes -----------------------------------------------------------------------


def test_two_processes_give_exactly_the_figures_of_one():
    """jobs=2 takes results as they finish but sums them in task order: the pinned floats."""
    names = [name for name, *_ in PINNED_SPLIT]
    rows = simulate(names, clients=[25], runs=45, seed=2026, jobs=2)
    assert [tuple(r) for r in rows] == PINNED_SPLIT
    wider = {"clients": [3, 25, 9], "runs": 45, "seed": 4}
    assert simulate(**wider, jobs=2) == simulate(**wider, jobs=1)


def test_progress_on_two_processes_counts_every_run_once():
    """Progress rises to the total, one task (20 runs, or the rest) at a time."""
    seen = []
    simulate(["full_jitter"], clients=[4, 8], runs=50, jobs=2, progress=lambda *a: seen.append(a))
    steps = [done - before for (before, _), (done, _) in zip([(0, 100), *seen], seen)]
    assert sorted(steps) == [10, 10, 20, 20, 20, 20]  # in whatever order the tasks finish
    assert {total for _, total in seen} == {100}


def test_no_more_processes_start_than_there_are_tasks():
    """jobs=256 for 5 tasks (100 runs of one cell, 20 per task) keeps 5 worker processes."""
    alive = []
    simulate(
        ["full_jitter"],
        clients=[5],
        runs=100,
        seed=1,
        jobs=256,
        progress=lambda done, total: alive.append(len(multiprocessing.active_children())),
    )
    assert alive == [5] * 5


def test_a_study_of_one_task_runs_in_this_process():
    """jobs=4 for 20 runs of one cell starts no process at all (a spawn costs more than the task)."""
    alive = []
    simulate(
        ["full_jitter"],
        clients=[5],
        runs=20,
        jobs=4,
        progress=lambda done, total: alive.append(len(multiprocessing.active_children())),
    )
    assert alive == [0]


def test_tasks_are_handed_out_costliest_first():
    """Cost grows with the square of the clients and with the runs; equals keep their order."""
    from backoff_iter.simulation import _costliest_first, _Task

    def task(strategy, clients, start, stop):
        return _Task(strategy, clients, start, stop, 1, 5.0, 2000.0)

    cells = [
        [task("exponential", 10, 0, 20)],
        [task("exponential", 190, 0, 20), task("exponential", 190, 20, 25)],
        [task("full_jitter", 190, 0, 20)],
        [task("full_jitter", 50, 0, 20)],
    ]
    handed_out = [(t.strategy, t.clients, t.start) for t in _costliest_first(map(iter, cells))]
    assert handed_out == [
        ("exponential", 190, 0),
        ("full_jitter", 190, 0),
        ("exponential", 190, 20),  # 5 runs of 190 clients cost more than 20 of 50
        ("full_jitter", 50, 0),
        ("exponential", 10, 0),
    ]


class Stop(Exception):
    pass


def stop(done, total):
    raise Stop(done, total)


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_study_of_a_billion_runs_starts_at_once(jobs):
    """Tasks are made as they are handed out: 50 million of them cost nothing up front."""
    with pytest.raises(Stop) as stopped:
        simulate(["none"], clients=[1], runs=10**9, jobs=jobs, progress=stop)
    assert stopped.value.args == (20, 10**9)


def test_a_strategy_or_count_named_twice_counts_once():
    """Repeating a name or a count neither repeats its row nor doubles its figures."""
    once = simulate(["none", "full_jitter"], clients=[3, 5], runs=4, seed=8)
    twice = simulate(["none", "full_jitter", "none"], clients=[3, 5, 3], runs=4, seed=8)
    assert twice == once


def test_results_coming_back_in_any_order_are_summed_in_task_order(monkeypatch):
    """Tasks finishing last-first (processes replaced by a reversing loop) give the pinned floats."""
    from backoff_iter import simulation

    def backwards(tasks, processes, finished):
        done = [(task, task()) for task in tasks]
        for task, figures in reversed(done):
            finished(task, figures)

    monkeypatch.setattr(simulation, "_in_processes", backwards)
    names = [name for name, *_ in PINNED_SPLIT]
    rows = simulate(names, clients=[25], runs=45, seed=2026, jobs=2)
    assert [tuple(r) for r in rows] == PINNED_SPLIT


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="signal masks are POSIX")
def test_a_second_ctrl_c_while_the_workers_are_stopped_cannot_leave_the_pool_hanging():
    """Ctrl-C, then another as the pool is being terminated (a terminal's second
    press, or `timeout -s INT`, which signals the process and then its group):
    the second waits until the workers are stopped, and the study ends with
    KeyboardInterrupt.  It cut terminate() short: join() then waited for
    results no worker would send, for ever."""
    code = (
        "import os, signal\n"
        "import multiprocessing.pool as pool\n"
        "from backoff_iter import simulation\n"
        "helped = pool.Pool._help_stuff_finish\n"
        "def second_ctrl_c(*args):  # inside terminate(), half done\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    return helped(*args)\n"
        "pool.Pool._help_stuff_finish = staticmethod(second_ctrl_c)\n"
        "def first_ctrl_c(done, total):\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "try:\n"
        "    simulation.simulate(['full_jitter'], clients=[10, 100], runs=100, jobs=2,"
        " progress=first_ctrl_c)\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=40)
    assert (done.returncode, done.stdout) == (0, "interrupted\n"), done.stderr
    assert "Traceback" not in done.stderr, done.stderr  # (coverage may warn there in CI)


def test_a_numpy_count_is_bounded_as_an_int_is():
    """runs=numpy.int64(2**62): taken as the int it stands for, so the study's
    bound refuses it (its cost, multiplied in numpy's 64 bits, wrapped round
    and passed); a numpy count of clients runs as the int."""
    import numpy  # (matplotlib's, of the test extra)

    def ran(done, total):  # the study began: its bound let it through
        raise AssertionError(f"{total} runs began")

    rejects(
        lambda: simulate(["full_jitter"], clients=[2], runs=numpy.int64(2**62), progress=ran),
        ValueError,
        "runs",
    )
    rng = random.Random(0)
    assert simulate_once("full_jitter", numpy.int64(3), rng) == simulate_once(
        "full_jitter", 3, random.Random(0)
    )
