"""The one check behind every "bad arguments" table of the suite, a fresh
interpreter's answer for the import checks, and the environment of a
subprocess left out of coverage."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from backoff_iter import ArgumentTypeError, ArgumentValueError


def rejects(call, error, parameter, *words):
    """call() raises *error* at once: one of this library's argument errors (so the
    command line reports it as bad usage), naming *parameter* as ``.parameter``
    and in its message, which holds every other word too."""
    with pytest.raises(error) as raised:
        call()
    assert isinstance(raised.value, (ArgumentValueError, ArgumentTypeError)), raised.value
    assert raised.value.parameter == parameter, (raised.value.parameter, parameter)
    words = (parameter, *words)
    for word in words:
        assert word in str(raised.value), (word, str(raised.value))


def in_threads(target, count=8, *, numbered=False):
    """Run *target* in *count* threads at once; return when all have ended.
    *numbered*: each thread calls it with its number, 0 to *count* - 1."""
    import threading

    threads = [
        threading.Thread(target=target, args=(number,) if numbered else ())
        for number in range(count)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def fresh_python(code):
    """What *code* prints in a fresh interpreter (stripped): nothing imported
    before it, as in a new process of the user's.  Its failure fails the test."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def unmeasured():
    """This process's environment, less what starts coverage in a subprocess
    (CI runs the suite under ``coverage run``, ``patch = subprocess``): for a
    subprocess whose code is not ours (the type checkers) or is measured by
    other tests (every picture, the quick benchmark run: under coverage
    they took two to three times as long, the longest tests of CI's run)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_PROCESS_")}


class Draws:
    """An rng whose draws are the given numbers, in turn."""

    def __init__(self, *draws):
        self.draws = list(draws)

    def random(self):
        return self.draws.pop(0)
