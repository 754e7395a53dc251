"""Write the docs' tables that come from long runs, each from the command named beside it.

    python docs/figures.py                        # every marked block of every page
    python docs/figures.py --only overload_fleet  # the blocks whose command contains this
    python docs/figures.py --list                 # each block and its command; nothing runs

A page marks each such block with two comments, the first naming the command::

    .. figures-start: python -m backoff_iter overload --seed 2026
    .. figures-end

and this script runs that command (``python`` being the interpreter that runs
this script, in the checkout's root), and writes what it printed between the
two lines as reStructuredText, with a line saying which command made it.
Every command is seeded: a rerun gives the same figures (the time a run took
aside).  The command is also the key into :data:`FIGURES`, which says how to
render its output; ``tests/test_figures.py`` checks that every block names a
command known here, and that no page holds a table of figures outside a
block.  Small figures are not made here: they are ``>>>`` examples or
``$ python -m backoff_iter`` examples, which the test suite runs.  The
benchmark tables are ``benchmarks/run.py --rst docs/benchmarks.rst``'s.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
START, END = ".. figures-start:", ".. figures-end"
#: Sections other runners write: benchmarks/run.py --rst docs/benchmarks.rst (and
#: --readme README.rst), and tests/mutation/mutate.py --table (CONTRIBUTING's
#: mutation record).
WRITTEN_ELSEWHERE = [
    (".. benchmark-start", ".. benchmark-end"),
    (".. speed-start", ".. speed-end"),
    (".. mutation-start", ".. mutation-end"),
]
RULE = re.compile(r"^=+( +=+)+$")  # a simple table's rule: two columns or more
SIMPLE = re.compile(r"^ *=+( +=+)+$")  # the same, indented or not
GRID = re.compile(r"^ *\+(-+\+)+$")
DIRECTIVE = re.compile(r"^ *\.\. (list|csv)-table::")


def pages() -> list[Path]:
    """The README, the files the docs include, and every page of the docs."""
    shown = [ROOT / name for name in ("README.rst", "CONTRIBUTING.rst", "CHANGELOG.rst")]
    return [*shown, *sorted((ROOT / "docs").rglob("*.rst"))]


def blocks(text: str) -> Iterator[tuple[int, int, str]]:
    """(line of the start marker, line of the end marker, command) of each block."""
    lines = text.splitlines()
    start = command = None
    for number, line in enumerate(lines):
        if line.startswith(START):
            if start is not None:
                raise ValueError(
                    f"line {number + 1}: a block starts inside the block of line {start + 1}"
                )
            start, command = number, line[len(START) :].strip()
            if not command:
                raise ValueError(f"line {number + 1}: a block names no command")
        elif line.startswith(END):
            if start is None or command is None:
                raise ValueError(f"line {number + 1}: a block ends that did not start")
            yield start, number, command
            start = command = None
    if start is not None:
        raise ValueError(f"line {start + 1}: a block that never ends")


def rewrite(text: str, output: Callable[[str], str], only: str = "") -> str:
    """*text* with each block (whose command contains *only*) rendered anew from
    ``output(command)``, the command's standard output; the rest as it was."""
    lines = text.splitlines()
    done = 0
    new: list[str] = []
    for start, end, command in blocks(text):
        new += lines[done : start + 1]
        if only in command:
            new += ["", *made_by(command), "", *FIGURES[command](output(command)), ""]
        else:
            new += lines[start + 1 : end]
        done = end
    new += lines[done:]
    return "\n".join(new) + "\n"


def made_by(command: str) -> list[str]:
    return [
        f"Made by ``{command}`` (seeded: a rerun gives these figures; ``python docs/figures.py`` writes them here):"
    ]


def tables(text: str) -> Iterator[tuple[int, tuple[str, ...]]]:
    """(line number, header cells) of each table outside the blocks: simple and grid
    tables, list-tables and csv-tables (tests/test_figures.py allows only tables of words)."""
    lines = text.splitlines()
    inside = set()
    for start, end, _ in blocks(text):
        inside.update(range(start, end + 1))
    for markers in WRITTEN_ELSEWHERE:
        if markers[0] in lines:
            start, end = (lines.index(marker) for marker in markers)
            inside.update(range(start, end + 1))
    number = 0
    while number < len(lines):
        line = lines[number].rstrip()
        if number in inside:
            number += 1
        elif SIMPLE.match(line):
            spans = [match.span() for match in re.finditer("=+", line)]
            header = lines[number + 1] if number + 1 < len(lines) else ""
            yield number + 1, tuple(header[a:b].strip() for a, b in spans)
            number += 1  # past the table: to its last rule (one followed by nothing)
            while number < len(lines) and not (
                SIMPLE.match(lines[number].rstrip())
                and (number + 1 == len(lines) or not lines[number + 1].strip())
            ):
                number += 1
            number += 1
        elif GRID.match(line):
            yield number + 1, tuple(cell.strip() for cell in lines[number + 1].split("|")[1:-1])
            number += 1
            while number < len(lines) and lines[number].strip()[:1] in ("+", "|"):
                number += 1
        elif DIRECTIVE.match(line):
            row: list[str] = []
            found = number + 1
            number += 1
            while number < len(lines) and (not lines[number].strip() or lines[number][:1] == " "):
                item = lines[number].strip()
                if item.startswith("* - ") and row:
                    break
                if item.startswith(("* - ", "- ")):
                    row.append(item.split("- ", 1)[1].strip())
                elif item.startswith(":header:"):
                    row = [cell.strip(' "') for cell in item[len(":header:") :].split(",")]
                number += 1
            yield found, tuple(row)
            while number < len(lines) and (not lines[number].strip() or lines[number][:1] == " "):
                number += 1
        else:
            number += 1


# -- What each command prints, as the page shows it -------------------------------------


def parts(output: str) -> list[str | list[str]]:
    """The command's output as text lines and tables (each a list of lines)."""
    found: list[str | list[str]] = []
    table: list[str] | None = None
    for line in output.splitlines():
        if table is not None:
            table.append(line)
            if RULE.match(line) and sum(1 for row in table if RULE.match(row)) == 3:
                found.append(table)
                table = None
        elif RULE.match(line):
            table = [line]
        elif line.strip():
            found.append(line.strip())
    if table is not None:
        raise ValueError(f"a table that never ends: {table[:3]}")
    return found


def cells(row: str) -> list[str]:
    return re.split(r"  +", row.strip())


def rst_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A simple table, numbers right-aligned."""
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows)]
    rule = "  ".join("=" * width for width in widths)

    def line(row: list[str]) -> str:
        return "  ".join(cell.rjust(width) for cell, width in zip(row, widths)).rstrip()

    return [rule, line(header), rule, *map(line, rows), rule]


#: The contention study's rows the page shows (tests/test_simulation.py checks three).
STUDY_ROWS = (10, 20, 50, 100, 150, 190)


def study(output: str) -> list[str]:
    """``simulate --json``: mean work and mean time per strategy, a selection of rows."""
    results = json.loads(output)
    strategies = list(dict.fromkeys(r["strategy"] for r in results))
    counts = sorted({r["clients"] for r in results})
    cell = {(r["strategy"], r["clients"]): r for r in results}
    shown = [n for n in STUDY_ROWS if n in counts]

    def rows(figure: Callable[[dict[str, float]], str]) -> list[list[str]]:
        return [[str(n), *(figure(cell[name, n]) for name in strategies)] for n in shown]

    header = ["clients", *strategies]
    worst, best, most = cell["exponential", shown[-1]], cell["full_jitter", shown[-1]], shown[-1]
    return [
        f"Mean work, in writes ({len(shown)} of the {len(counts)} rows):",
        "",
        *rst_table(header, rows(lambda r: f"{r['work']:,.0f}")),
        "",
        "Mean time until the last client succeeded, in seconds:",
        "",
        *rst_table(header, rows(lambda r: f"{r['time'] / 1000:.2f}")),
        "",
        f"At {most} clients exponential backoff, without jitter, did"
        f" {worst['work'] / best['work']:.1f} times the work of full jitter and took"
        f" {worst['time'] / best['time']:.1f} times as long.",
    ]


def storm(output: str) -> list[str]:
    """``overload``'s table, as it prints it."""
    return ["::", "", *(f"    {line}" for line in output.splitlines() if line.strip())]


def hedging(output: str) -> list[str]:
    """``benchmarks/hedging.py``: the model, the table, the calls one hedge cannot save,
    and what the hedge bought."""
    found = parts(output)
    model = next(part for part in found if isinstance(part, str) and part.startswith("Model:"))
    both = next(part for part in found if isinstance(part, str) and part.startswith("Calls whose"))
    (table,) = (part for part in found if isinstance(part, list))
    plain, hedge = (cells(row) for row in table[3:5])
    return [
        model,
        "",
        *table,
        "",
        both,
        "",
        f"One hedge at the p95 cost {hedge[4]} more attempts; p99 went from {plain[2]} ms to"
        f" {hedge[2]} ms, p99.9 from {plain[3]} ms to {hedge[3]} ms, and the median from"
        f" {plain[1]} ms to {hedge[1]} ms.",
    ]


def fleet(output: str) -> list[str]:
    """``benchmarks/overload_fleet.py``: where it ran, a table per server, the longer runs."""
    lines: list[str] = []
    machine = runs = ""
    for part in parts(output):
        if isinstance(part, list):
            lines += [*part, ""]
        elif part.startswith("Machine: "):
            machine = part[len("Machine: ") :].rstrip(".")
        elif part.startswith("Runs: "):
            count, runs = part[len("Runs: ") :].split(" ", 1)
            lines += [f"On {machine}: {count} runs {runs}", ""]
        elif part.startswith("server: "):
            lines += [f"``--server {part[len('server: ') :]}``:", ""]
        elif part.startswith("Retries against one budget ("):
            lines += [part, ""]
        elif part.startswith("Longer runs ("):
            seconds = part[len("Longer runs (") :].split(")")[0]
            lines += [f"The runs of a row that never recovered, run for {seconds}:", ""]
        elif not part.startswith("Picture: "):
            raise ValueError(
                f"benchmarks/overload_fleet.py printed what this does not know: {part}"
            )
    if not machine or not runs:
        raise ValueError("benchmarks/overload_fleet.py printed no Machine: or Runs: line")
    return lines[:-1]


#: Each command a page may name, and how its output becomes the page's block.
FIGURES: dict[str, Callable[[str], list[str]]] = {
    "python -m backoff_iter simulate --seed 2026 --json": study,
    "python -m backoff_iter overload --seed 2026": storm,
    "python benchmarks/hedging.py": hedging,
    "python benchmarks/overload_fleet.py": fleet,
}


def run(command: str) -> str:
    """What *command* prints, run from the checkout's root with this interpreter."""
    argv = shlex.split(command)
    if argv[0] == "python":
        argv[0] = sys.executable
    print(f"$ {command}", file=sys.stderr, flush=True)
    started = time.perf_counter()
    result = subprocess.run(argv, cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True)
    print(f"  ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
    return result.stdout


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="only the blocks whose command contains this")
    parser.add_argument("--list", action="store_true", help="list the blocks; run nothing")
    args = parser.parse_args(argv)
    wanted = []
    for page in pages():
        for start, _, command in blocks(page.read_text(encoding="utf-8")):
            where = f"{page.relative_to(ROOT)}:{start + 1}"
            if command not in FIGURES:
                raise SystemExit(f"{where}: no figure is made by {command!r}")
            if args.list:
                print(f"{where}: {command}")
            elif args.only in command:
                wanted.append(command)
    # Every command first (each once, however many blocks name it), then the pages,
    # each read just before it is written: a long run does not undo edits made meanwhile.
    outputs = {command: run(command) for command in dict.fromkeys(wanted)}
    for page in pages() if outputs else []:
        text = page.read_text(encoding="utf-8")
        new = rewrite(text, outputs.__getitem__, args.only)
        if new != text:
            page.write_text(new, encoding="utf-8")
            print(f"wrote {page.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
