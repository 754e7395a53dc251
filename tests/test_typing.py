"""The package and its public API pass mypy --strict."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

from checks import fresh_python, unmeasured

ROOT = Path(__file__).resolve().parent.parent


# Each checker once, at the two ends: mypy reads the branches for the Python
# running the suite, pyright those for 3.9 (python_requires; mypy 2 reads 3.10 at
# the oldest).  Each run costs 15-25 CPU-seconds, and CI has ten minutes.
def test_package_and_public_api_pass_mypy_strict():
    """mypy --strict finds nothing in backoff_iter/ nor in a file that uses every public name."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "backoff_iter",
            "tests/typing_check.py",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=unmeasured(),
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_package_and_public_api_pass_pyright():
    """pyright finds nothing either, and flags an unneeded ignore (so @retry's kept signature is checked)."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pyright",
            "--pythonpath",
            sys.executable,
            "-p",
            "tests/pyrightconfig.json",
            "--pythonversion",
            "3.9",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=unmeasured(),
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_public_name_is_exported_and_typed():
    """__all__ lists what the package exports, every name of it resolves, and py.typed ships."""
    import backoff_iter

    public = {
        name
        for name, value in vars(backoff_iter).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public <= set(backoff_iter.__all__)
    assert all(getattr(backoff_iter, name) is not None for name in backoff_iter.__all__)
    assert (ROOT / "backoff_iter" / "py.typed").exists()


def test_dir_of_the_package_shows_every_public_name_before_it_is_imported():
    """A REPL's completion and dir() list the names imported on first use too,
    and asking imports nothing."""
    code = (
        "import sys, backoff_iter; before = set(sys.modules); names = dir(backoff_iter); "
        "print(sorted(set(backoff_iter.__all__) - set(names)), names == sorted(names),"
        " sorted(set(sys.modules) - before))"
    )
    assert fresh_python(code) == "[] True []"


def test_importing_the_package_leaves_the_simulators_and_heavy_modules_unloaded():
    """A service that only retries does not pay for the simulators, asyncio, logging or inspect."""
    code = (
        "import sys; before = set(sys.modules); import backoff_iter; "
        "new = set(sys.modules) - before; "  # what importing us loaded, and nothing else did
        "print(sorted(m for m in ('asyncio', 'logging', 'inspect', 'more_itertools', "
        "'backoff_iter.overload', 'backoff_iter.simulation', 'backoff_iter.planning') "
        "if m in new))"
    )
    assert fresh_python(code) == "[]"
