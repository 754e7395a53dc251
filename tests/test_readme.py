"""The README's shell examples print what the README says (its >>> examples run as doctests)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.rst"


def shell_examples():
    """(command, expected lines) for each indented ``$ python -m backoff_iter`` block."""
    lines = README.read_text().splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("$ python -m backoff_iter"):
            expected = []
            for following in lines[i + 1 :]:
                if not following.startswith("    ") or following.strip().startswith("$"):
                    break
                expected.append(following.strip())
            yield line.strip()[2:], expected


def matches(expected, got):
    """Line by line; a line '...' stands for any number of lines."""
    if not expected:
        return not got
    if expected[0] == "...":
        return any(matches(expected[1:], got[k:]) for k in range(len(got) + 1))
    return bool(got) and expected[0].split() == got[0].split() and matches(expected[1:], got[1:])


def test_readme_has_shell_examples():
    """The README documents the command line with runnable examples."""
    assert len(list(shell_examples())) >= 2


def test_every_shell_example_prints_what_the_readme_shows():
    """Each example runs and its output matches the README ('...' elides lines)."""
    for command, expected in shell_examples():
        argv = shlex.split(command)
        result = subprocess.run([sys.executable, *argv[1:]], capture_output=True, text=True)
        assert result.returncode == 0, (command, result.stderr)
        assert matches(expected, result.stdout.splitlines()), (command, result.stdout)
