"""The shell examples of the README and the docs print what they say (their >>> examples run
as doctests: README.rst and docs/ are in the suite's testpaths)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.rst"
PAGES = [README, *sorted((ROOT / "docs").rglob("*.rst"))]


def shell_examples(text):
    """(command, expected lines) for each indented ``$ python -m backoff_iter`` block."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("$ python -m backoff_iter"):
            expected = []
            for following in lines[i + 1 :]:
                if not following.startswith("    ") or following.strip().startswith("$"):
                    break
                expected.append(following.strip())
            yield line.strip()[2:], expected


EXAMPLES = [
    (page, command, expected)
    for page in PAGES
    for command, expected in shell_examples(page.read_text(encoding="utf-8"))
]


def matches(expected, got):
    """Line by line; a line '...' stands for any number of lines."""
    if not expected:
        return not got
    if expected[0] == "...":
        return any(matches(expected[1:], got[k:]) for k in range(len(got) + 1))
    return bool(got) and expected[0].split() == got[0].split() and matches(expected[1:], got[1:])


def test_the_reader_finds_each_command_and_its_output_up_to_the_next():
    """Two examples in one block: each command with its own lines, none of the other's."""
    text = "Text::\n\n    $ python -m backoff_iter a\n    1\n    $ python -m backoff_iter b\n    2\n\nEnd\n"
    assert list(shell_examples(text)) == [
        ("python -m backoff_iter a", ["1"]),
        ("python -m backoff_iter b", ["2"]),
    ]


def test_the_command_line_guide_and_the_studies_show_runnable_examples():
    """The pages about the command line document it with examples this test runs."""
    pages = {page.name for page, _, _ in EXAMPLES}
    assert {"cli.rst", "studies.rst"} <= pages
    assert len(EXAMPLES) >= 5


@pytest.mark.parametrize(
    ("page", "command", "expected"),
    EXAMPLES,
    ids=[
        f"{page.name}: {command[len('python -m backoff_iter ') :]}" for page, command, _ in EXAMPLES
    ],
)
def test_every_shell_example_prints_what_its_page_shows(page, command, expected):
    """Each example runs and its output matches its page ('...' elides lines)."""
    argv = shlex.split(command)
    result = subprocess.run([sys.executable, *argv[1:]], capture_output=True, text=True)
    assert result.returncode == 0, (command, result.stderr)
    assert matches(expected, result.stdout.splitlines()), (page.name, command, result.stdout)
