"""What users install is what we test: the installed package holds every
module of the checkout, each imports, its docstrings' examples run, and the
command line starts from any folder.

The suite imports the installed package (tests/conftest.py): in CI the
wheel built from a clean clone, so a module the wheel left out fails here.
"""

from __future__ import annotations

import doctest
import importlib
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import backoff_iter

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "backoff_iter"
INSTALLED = Path(backoff_iter.__file__).resolve().parent


def modules_in(folder: Path) -> list[str]:
    """The dotted names of the modules under *folder*, a copy of the package."""
    names = []
    for path in sorted(folder.rglob("*.py")):
        parts = path.relative_to(folder).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names.append(".".join(("backoff_iter", *parts)))
    return names


# __main__ runs the command line when imported: it is started as a process below.
MODULES = [name for name in modules_in(SOURCE) if name != "backoff_iter.__main__"]


def test_the_installed_package_holds_every_module_of_the_checkout():
    """Every .py under the checkout's backoff_iter/ is in the imported package, and py.typed too."""
    missing = sorted(set(modules_in(SOURCE)) - set(modules_in(INSTALLED)))
    assert not missing, f"the package at {INSTALLED} lacks {missing}"
    assert (INSTALLED / "py.typed").is_file()


def test_the_suite_imports_the_installed_package_when_ci_says_so():
    """Under BACKOFF_ITER_TEST_INSTALLED, backoff_iter comes from outside the checkout."""
    if not os.environ.get("BACKOFF_ITER_TEST_INSTALLED"):
        pytest.skip("a development run: CI sets BACKOFF_ITER_TEST_INSTALLED=1")
    assert SOURCE.resolve() != INSTALLED


def test_subprocesses_import_the_package_this_suite_tests():
    """python -c and python -m, started as the suite starts them, find the same package."""
    result = subprocess.run(
        [sys.executable, "-c", "import backoff_iter; print(backoff_iter.__file__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(result.stdout.strip()).resolve().parent == INSTALLED


@pytest.mark.parametrize("name", MODULES)
def test_every_module_imports_and_its_examples_run(name):
    """Each module imports, and every example in its docstrings runs as a doctest."""
    module = importlib.import_module(name)
    assert Path(module.__file__).resolve().is_relative_to(INSTALLED)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    report = io.StringIO()
    for test in doctest.DocTestFinder().find(module, name):
        runner.run(test, out=report.write)
    assert runner.failures == 0, report.getvalue()


@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "-m", "backoff_iter"],
        [shutil.which("backoff-iter", path=str(Path(sys.executable).parent)) or "backoff-iter"],
    ],
    ids=["python -m backoff_iter", "backoff-iter"],
)
def test_the_command_line_starts_from_any_folder(command, tmp_path):
    """python -m backoff_iter and the backoff-iter script print the version and a schedule."""
    version = subprocess.run(
        [*command, "--version"], capture_output=True, text=True, cwd=tmp_path, check=True
    )
    assert version.stdout.strip() == f"backoff_iter {backoff_iter.__version__}"
    shown = subprocess.run(
        [*command, "show", "exponential", "--base", "1", "-n", "3"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    )
    assert [line.split()[:2] for line in shown.stdout.splitlines()[1:]] == [
        ["0", "1.000"],
        ["1", "2.000"],
        ["2", "4.000"],
    ]
