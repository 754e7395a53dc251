import os
import shutil
import sys
import tempfile
from importlib.util import find_spec
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# What users install is what we test.  The suite runs from a scratch folder,
# so that neither this process (pytest runs with --import-mode=importlib,
# which adds no folder of the checkout to sys.path) nor the subprocesses it
# starts (`python -m backoff_iter`, `python -c ...`) import the source
# folder beside them by accident: `import backoff_iter` finds the installed
# package.  The helpers of the suite (checks, formulas, ...) are imported
# from this folder.
ROOT = Path(__file__).resolve().parent.parent
HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

# CI sets BACKOFF_ITER_TEST_INSTALLED=1: then a suite that would import the
# checkout's own folder (run as `python -m pytest` from the checkout, or an
# editable install) stops at once instead of passing on the wrong code.
if os.environ.get("BACKOFF_ITER_TEST_INSTALLED"):
    _spec = find_spec("backoff_iter")
    _origin = Path(_spec.origin).resolve() if _spec and _spec.origin else None
    if _origin is None or _origin.parent == ROOT / "backoff_iter":
        pytest.exit(
            f"BACKOFF_ITER_TEST_INSTALLED is set, but backoff_iter resolves to {_origin}:"
            " install the wheel and run the suite with the installed pytest"
            " (.venv/bin/pytest), not from the source folder",
            returncode=4,
        )


# Where the run started, and its scratch folder.
_SCRATCH = pytest.StashKey[tuple[str, str]]()


def pytest_configure(config):
    """Run from a scratch folder, once pytest has found its test files."""
    config.stash[_SCRATCH] = (os.getcwd(), tempfile.mkdtemp(prefix="backoff_iter-suite-"))
    os.chdir(config.stash[_SCRATCH][1])


def pytest_unconfigure(config):
    """Go back and remove the scratch folder (a run left one behind in /tmp)."""
    if _SCRATCH in config.stash:
        started_in, scratch = config.stash[_SCRATCH]
        os.chdir(started_in)
        shutil.rmtree(scratch, ignore_errors=True)


# A test marked long_run runs, many times over, code that shorter tests run
# too: a study of the simulator, a million values, 200 seeded scripts against
# botocore's own handler, a whole script (the pictures, the quick benchmark).
# Under coverage (CI's main run) tracing it took 2x to 27x its plain time, for
# lines the rest measure: coverage pauses while it runs, unless it is marked
# long_run(measured=True) - the only test to reach some lines (a model against
# its script for every branch).  CI's runs on the oldest and the newest Python
# leave long runs out (.ci/run): their shorter siblings run there.
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    measuring = sys.modules.get("coverage")
    current = measuring.Coverage.current() if measuring is not None else None
    marker = item.get_closest_marker("long_run")
    if current is None or marker is None or marker.kwargs.get("measured"):
        yield
        return
    current.stop()
    try:
        yield
    finally:
        current.start()


# The suite must never flake: the default "ci" profile derandomizes every
# property test (same examples every run) and keeps no example database.
# HYPOTHESIS_PROFILE=dev explores new random examples on each run.
settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=150,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, max_examples=100)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def switching_often():
    """Threads switch every microsecond: a missing lock loses counts at once, not once a year."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(interval)


@pytest.fixture
def no_process_hooks():
    """No process-wide hook - not even the default one that logs retries - for one test."""
    from backoff_iter import instrument

    instrument.disable()
    yield
    instrument.reset()
