import os
import sys

import pytest
from hypothesis import HealthCheck, settings

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
