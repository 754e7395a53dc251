"""The docs' figures come from their runs: every table of figures on a page is a block that
docs/figures.py writes from the command it names (or benchmarks/run.py's section), every
such command is one the script knows, and the script renders each command's output as the
page shows it.  Small figures are doctests and shell examples, which run elsewhere."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("figures", ROOT / "docs" / "figures.py")
figures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(figures)

#: The tables of words the pages may hold outside a block, by their header: none holds a
#: figure of a run.  A new table of figures goes in a block of docs/figures.py instead.
WORDS = {
    ("guide", "what it covers"),
    ("module", "what it holds"),
    ("command", "what it does"),
    ("extra", "installs", "for"),
    ("part", "asked before a request", "told after it"),
    ("adapter", "gives"),
    ("strategy", "the delay before retry number ``attempt`` (from 0)"),
    ("field", "what it holds"),
}


def page_blocks():
    """(page, start line, end line, command) of every block of every page."""
    return [
        (page, start, end, command)
        for page in figures.pages()
        for start, end, command in figures.blocks(page.read_text(encoding="utf-8"))
    ]


def test_every_block_names_a_command_the_generator_knows_and_every_command_has_a_block():
    """Each marked block's command is a key of FIGURES, and each key is used by a page."""
    found = page_blocks()
    named = {command for *_, command in found}
    assert named <= set(figures.FIGURES), named - set(figures.FIGURES)
    assert set(figures.FIGURES) <= named, set(figures.FIGURES) - named
    assert {page.name for page, *_ in found} >= {"studies.rst", "timeouts-and-hedging.rst"}


def test_every_block_was_written_by_the_generator():
    """Each block opens with the line saying which command made it, and holds more than that."""
    for page, start, end, command in page_blocks():
        inside = page.read_text(encoding="utf-8").splitlines()[start + 1 : end]
        written = [line for line in inside if line.strip()]
        assert written[: len(figures.made_by(command))] == figures.made_by(command), (page, start)
        assert len(written) > len(figures.made_by(command)), (page.name, command)


def test_no_page_holds_a_table_outside_a_block_but_tables_of_words():
    """Every table outside the generated blocks (and benchmarks/run.py's section) is one of WORDS."""
    left = [
        (page.name, line, header)
        for page in figures.pages()
        for line, header in figures.tables(page.read_text(encoding="utf-8"))
        if header not in WORDS
    ]
    assert not left, f"a table of figures outside a block of docs/figures.py: {left}"


def test_the_table_finder_sees_each_kind_of_table_and_none_inside_a_block():
    """Simple, grid, list- and csv-tables are found with their header; a table inside a block
    or inside the benchmark section is not, and a title's underline is no table."""
    text = "\n".join(
        [
            "Title",
            "=====",
            "",
            "=====  ====",
            "name   ns",
            "=====  ====",
            "a      1",
            "=====  ====",
            "",
            "+------+-----+",
            "| kind | ms  |",
            "+======+=====+",
            "| b    | 2   |",
            "+------+-----+",
            "",
            ".. list-table::",
            "   :header-rows: 1",
            "",
            "   * - part",
            "     - cost",
            "   * - c",
            "     - 3",
            "",
            ".. csv-table::",
            '   :header: "what", "when"',
            "",
            "   d, 4",
            "",
            ".. figures-start: python x",
            "",
            "===  ===",
            "in   5",
            "===  ===",
            "",
            ".. figures-end",
            ".. benchmark-start",
            "",
            "===  ===",
            "run  6",
            "===  ===",
            "",
            ".. benchmark-end",
            "",
        ]
    )
    assert list(figures.tables(text)) == [
        (4, ("name", "ns")),
        (10, ("kind", "ms")),
        (16, ("part", "cost")),
        (24, ("what", "when")),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (".. figures-start: a\n.. figures-start: b\n.. figures-end\n", "starts inside"),
        ("text\n.. figures-end\n", "did not start"),
        (".. figures-start: a\ntext\n", "never ends"),
        (".. figures-start:\n.. figures-end\n", "names no command"),
    ],
)
def test_markers_that_do_not_pair_up_are_refused(text, message):
    """A block inside a block, an end without a start, a start without an end, no command."""
    with pytest.raises(ValueError, match=message):
        list(figures.blocks(text))


def test_rewriting_replaces_only_the_blocks_asked_for(monkeypatch):
    """Each block asked for is its command's rendered output under the made-by line; the text
    around it and a block not asked for stay as they were."""
    monkeypatch.setitem(figures.FIGURES, "python one", lambda out: [f"rendered {out}"])
    monkeypatch.setitem(figures.FIGURES, "python two", lambda out: [f"rendered {out}"])
    text = (
        "before\n.. figures-start: python one\nold one\n.. figures-end\n"
        "between\n.. figures-start: python two\nold two\n.. figures-end\nafter\n"
    )
    ran = []

    def output(command):
        ran.append(command)
        return command.split()[1]

    new = figures.rewrite(text, output, only="one")
    assert ran == ["python one"]
    assert new == (
        "before\n.. figures-start: python one\n\n"
        + "\n".join(figures.made_by("python one"))
        + "\n\nrendered one\n\n.. figures-end\n"
        "between\n.. figures-start: python two\nold two\n.. figures-end\nafter\n"
    )
    assert figures.rewrite(new, output, only="one") == new  # the same output: the same page


# -- Each command's output, as its page shows it -----------------------------------------


def test_the_study_shows_the_pages_rows_with_work_and_seconds_and_the_ratio():
    """simulate --json: the rows of STUDY_ROWS it has, work rounded, time in seconds; the
    sentence compares exponential with full jitter at the most clients; no other line
    starts with a digit (tests/test_simulation.py reads the rows so)."""
    results = [
        {"strategy": name, "clients": n, "work": work * n, "time": 1000.0 * time * n}
        for n in (10, 20, 30, 50)
        for name, work, time in (("exponential", 6.0, 2.0), ("full_jitter", 2.0, 0.25))
    ]
    lines = figures.study(json.dumps(results))
    assert "Mean work, in writes (3 of the 4 rows):" in lines
    rows = [line.split() for line in lines if line.strip()[:1].isdigit()]
    assert rows == [
        ["10", "60", "20"],
        ["20", "120", "40"],
        ["50", "300", "100"],
        ["10", "20.00", "2.50"],
        ["20", "40.00", "5.00"],
        ["50", "100.00", "12.50"],
    ]
    assert lines[-1] == (
        "At 50 clients exponential backoff, without jitter, did 3.0 times the work of"
        " full jitter and took 8.0 times as long."
    )


def test_the_storm_is_shown_as_the_command_prints_it():
    """overload: its table in a literal block, line for line."""
    output = "   strategy  budget\n       none    none\n"
    assert figures.storm(output) == ["::", "", "       strategy  budget", "           none    none"]


HEDGING = """Model: 500 calls, one every 2 ms; each attempt ~10 ms; random.Random(2026); simulated time.
Machine: x86_64, 2 cores, Linux; CPython 3.11.7.

=============================  ======  ======  ========  ==============
run                            p50 ms  p99 ms  p99.9 ms  extra attempts
=============================  ======  ======  ========  ==============
no hedging                     9.8     995     1,095     0.0%
one hedge after 15.7 ms (p95)  9.7     24.8    27.0      5.0%
=============================  ======  ======  ========  ==============

Calls whose attempt and hedge both met a slow replica: 0.

Picture: /tmp/hedging.png
"""


def test_the_hedging_run_shows_its_model_table_and_what_the_hedge_bought():
    """benchmarks/hedging.py: the model, the table as printed, the calls no hedge saves, and
    a sentence read off the table; not the machine (simulated time) nor the picture's path."""
    lines = figures.hedging(HEDGING)
    assert lines[0].startswith("Model: 500 calls")
    assert "no hedging                     9.8     995     1,095     0.0%" in lines
    assert "Calls whose attempt and hedge both met a slow replica: 0." in lines
    assert lines[-1] == (
        "One hedge at the p95 cost 5.0% more attempts; p99 went from 995 ms to 24.8 ms,"
        " p99.9 from 1,095 ms to 27.0 ms, and the median from 9.8 ms to 9.7 ms."
    )
    assert not any(line.startswith(("Machine", "Picture")) for line in lines)


FLEET = """Machine: x86_64, 2 cores, Linux-6; CPython 3.11.7.
Runs: 51 in 9 s on 2 processes (the slowest 1 s).

server: serve-all

====================  =======  ==================
budget / part         scope    1 client
====================  =======  ==================
none                  \\-       3.20 / 0% / never
====================  =======  ==================

server: drop-expired

====================  =======  ==================
budget / part         scope    1 client
====================  =======  ==================
none                  \\-       3.10 / 6% / never
====================  =======  ==================

Longer runs (60 s):

============  =======  =======  =========  =================
budget        scope    clients  server     figures
============  =======  =======  =========  =================
retry_budget  fleet    1        serve-all  1.26 / 0% / never
============  =======  =======  =========  =================

Picture: /tmp/overload-fleet.png
"""


def test_the_fleet_run_shows_where_it_ran_a_table_per_server_and_the_longer_runs():
    """benchmarks/overload_fleet.py: the machine and the run's time in one sentence, each
    server's option above its table, the longer runs' table; the tables as printed."""
    lines = figures.fleet(FLEET)
    assert lines[0] == (
        "On x86_64, 2 cores, Linux-6; CPython 3.11.7: 51 runs in 9 s on 2 processes"
        " (the slowest 1 s)."
    )
    labels = [line for line in lines if line and not line[0].isalnum() and "=" not in line]
    assert labels == ["``--server serve-all``:", "``--server drop-expired``:"]
    assert "The runs of a row that never recovered, run for 60 s:" in lines
    assert "none                  \\-       3.10 / 6% / never" in lines
    assert sum(1 for line in lines if figures.RULE.match(line)) == 9
    assert lines[-1].startswith("=") and not any("Picture" in line for line in lines)


def test_output_a_renderer_does_not_know_is_refused():
    """A line the fleet's renderer cannot place fails the run instead of vanishing."""
    with pytest.raises(ValueError, match="does not know"):
        figures.fleet(FLEET.replace("Longer runs (60 s):", "Something new:"))
    with pytest.raises(ValueError, match="never ends"):
        figures.parts("=====  ==\nname   ns\n=====  ==\nrow    1\n")
